import { InMemoryLockProvider, type LockProvider } from 'nestjs-serialized';
import { describeLockProviderContract } from './lock-provider.contract';

describeLockProviderContract({
  name: 'in-memory',
  create: async (options) => new InMemoryLockProvider(options),
  // In-memory state cannot be shared between instances: "someone else" is this same instance.
  createPeer: async (provider) => provider,
  watchesHeldLocks: false,
  grantsNow: true,
  holdsTogether: true,
  // Nothing renews an in-memory lock: three leases of 100 ms (the least leaseMs takes) test what three of 600 would.
  shortLeaseMs: 100,
  leftovers: async (provider: LockProvider) => {
    const memory = provider as InMemoryLockProvider;
    return memory.activeKeys + (memory.timerArmed ? 1 : 0);
  },
});
