import AsyncLock from 'async-lock';
import { Mutex, Semaphore } from 'async-mutex';
import { InMemoryLockProvider, LockService, type LockProvider } from 'nestjs-serialized';
import { nestedInSortedOrder, type LockSubject, type SubjectSpec } from './subject';

/**
 * `LockService` keeps its reentrancy context in an AsyncLocalStorage. On Node 20 an
 * enabled AsyncLocalStorage installs promise hooks that tax every promise in the
 * process — the peers measured after this library included. Closing a subject of
 * this library disables it again, so each contender runs under its own costs only.
 */
function releaseAsyncContext(service: LockService): void {
  (service as unknown as { context?: { disable?: () => void } }).context?.disable?.();
}

/** This library as users call it: `LockService.run` over `provider`; closing shuts both down. */
export function lockServiceSubject(provider: LockProvider): LockSubject {
  const service = new LockService(provider);
  return {
    withLock: (key, fn) => service.run(key, fn),
    withLocks: (keys, fn) => service.run(keys, fn),
    withPermit: (key, permits, fn) => service.run(key, fn, { concurrency: permits }),
    withShared: (key, fn) => service.run(key, fn, { shared: true }),
    close: async () => {
      await provider.close();
      releaseAsyncContext(service);
    },
  };
}

/** This library as users call it: `LockService.run` over the in-memory provider (defaults). */
export const oursMemory: SubjectSpec = {
  id: 'ours',
  label: 'nestjs-serialized',
  kind: 'ours',
  backend: 'memory',
  settings: 'new LockService(new InMemoryLockProvider()); service.run(key, fn) — defaults (waitTimeoutMs 10 s, maxPending 1000)',
  canWait: true,
  async open(): Promise<LockSubject> {
    return lockServiceSubject(new InMemoryLockProvider());
  },
};

/**
 * async-mutex has no keyed lock; its maintainers point to a Map of Mutex. Entries
 * are reference-counted and deleted when the last user leaves, so idle keys cost
 * nothing (as the library's own in-memory provider guarantees).
 */
export const asyncMutexMap: SubjectSpec = {
  id: 'async-mutex',
  label: 'async-mutex (Map of Mutex)',
  kind: 'peer',
  backend: 'memory',
  settings: 'Map<key, { mutex: new Mutex(), users }>; mutex.runExclusive(fn); entry deleted when its last user leaves',
  canWait: true,
  async open(): Promise<LockSubject> {
    const mutexes = new Map<string, { mutex: Mutex; users: number }>();
    const withLock = async (key: string, fn: () => void | Promise<void>): Promise<void> => {
      let entry = mutexes.get(key);
      if (!entry) mutexes.set(key, (entry = { mutex: new Mutex(), users: 0 }));
      entry.users++;
      try {
        await entry.mutex.runExclusive(fn);
      } finally {
        if (--entry.users === 0) mutexes.delete(key);
      }
    };
    return {
      withLock,
      // No multi-key call: nested mutexes in sorted order, as a user would write it.
      withLocks: (keys, fn) => nestedInSortedOrder(withLock, keys, fn),
      close: async () => mutexes.clear(),
    };
  },
};

export const asyncLock: SubjectSpec = {
  id: 'async-lock',
  label: 'async-lock',
  kind: 'peer',
  backend: 'memory',
  settings: 'new AsyncLock({ maxPending: 1000 }); lock.acquire(key, fn) — no timeout (its default)',
  canWait: true,
  async open(): Promise<LockSubject> {
    const lock = new AsyncLock({ maxPending: 1000 });
    return {
      withLock: (key, fn) => lock.acquire(key, fn),
      // async-lock takes an array of keys in one call; it takes them in the order given, so sorted.
      withLocks: (keys, fn) => lock.acquire([...new Set(keys)].sort(), fn),
      close: async () => undefined,
    };
  },
};

export const memorySubjects: SubjectSpec[] = [oursMemory, asyncMutexMap, asyncLock];

/**
 * Scenario 8: async-mutex's `Semaphore` per key, in a reference-counted Map as for its
 * `Mutex` (the library has no keyed semaphore).
 */
export const asyncMutexSemaphore: SubjectSpec = {
  id: 'async-mutex-semaphore',
  label: 'async-mutex (Map of Semaphore)',
  kind: 'peer',
  backend: 'memory',
  settings: 'Map<key, { semaphore: new Semaphore(permits), users }>; semaphore.runExclusive(fn); entry deleted when its last user leaves',
  canWait: true,
  async open(): Promise<LockSubject> {
    const semaphores = new Map<string, { semaphore: Semaphore; users: number }>();
    const withPermit = async (key: string, permits: number, fn: () => void | Promise<void>): Promise<void> => {
      let entry = semaphores.get(key);
      if (!entry) semaphores.set(key, (entry = { semaphore: new Semaphore(permits), users: 0 }));
      entry.users++;
      try {
        await entry.semaphore.runExclusive(fn);
      } finally {
        if (--entry.users === 0) semaphores.delete(key);
      }
    };
    return {
      withLock: (key, fn) => withPermit(key, 1, fn),
      withPermit,
      close: async () => semaphores.clear(),
    };
  },
};
