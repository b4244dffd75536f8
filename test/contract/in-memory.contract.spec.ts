import { InMemoryLockProvider, type LockProvider } from 'nestjs-serialized';
import { describeLockProviderContract } from './lock-provider.contract';

describeLockProviderContract({
  name: 'in-memory',
  create: async (options) => new InMemoryLockProvider(options),
  // In-memory state cannot be shared between instances: "someone else" is this same instance.
  createPeer: async (provider) => provider,
  watchesHeldLocks: false,
  grantsNow: true,
  leftovers: async (provider: LockProvider) => {
    const memory = provider as InMemoryLockProvider;
    return memory.activeKeys + (memory.timerArmed ? 1 : 0);
  },
});
