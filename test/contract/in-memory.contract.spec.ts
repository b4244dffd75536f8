import { InMemoryLockProvider } from 'nestjs-serialized';
import { describeLockProviderContract, type ClosableLockProvider } from './lock-provider.contract';

describeLockProviderContract({
  name: 'in-memory',
  create: async (options) => new InMemoryLockProvider(options),
  // In-memory state cannot be shared between instances: "someone else" is this same instance.
  createPeer: async (provider) => provider,
  watchesHeldLocks: false,
  leftovers: async (provider: ClosableLockProvider) => {
    const memory = provider as InMemoryLockProvider;
    return memory.activeKeys + (memory.timerArmed ? 1 : 0);
  },
});
