import { InMemoryLockProvider } from 'nestjs-serialized';
import { describeLockProviderContract, type ClosableLockProvider } from './lock-provider.contract';

describeLockProviderContract({
  name: 'in-memory',
  create: async (options) => new InMemoryLockProvider(options),
  leftovers: async (provider: ClosableLockProvider) => {
    const memory = provider as InMemoryLockProvider;
    return memory.activeKeys + (memory.timerArmed ? 1 : 0);
  },
});
