import { LockBusyError, LockLostError, LockOrderError, LockTimeoutError, SerializationKeyError } from './errors';
import type { AcquireOptions } from './acquire-options.interface';
import type { Lock } from './lock.interface';
import { LockProvider } from './lock.provider';
import { LockService } from './lock.service';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';
import { Serialized } from './decorators/serialized.decorator';
import { SERIALIZED_LOCK_SERVICE } from './serialized.constants';

class Bank {
  constructor(readonly service: LockService) {
    (this as unknown as Record<symbol, LockService>)[SERIALIZED_LOCK_SERVICE] = service;
  }

  @Serialized(['0', '1'], { scope: 'account' })
  async transfer(_from: string, _to: string): Promise<string[]> {
    return this.service.currentSet()!.map((lock) => lock.key);
  }

  @Serialized((ids: string[]) => ids, { scope: 'account' })
  async settle(_ids: string[]): Promise<string[]> {
    return this.service.currentSet()!.map((lock) => lock.key);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const errorOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('LockService.run with a key set (several keys at once)', () => {
  let provider: InMemoryLockProvider;
  let service: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    service = new LockService(provider);
  });
  afterEach(() => provider.close?.());

  it('hands the section the locks in the order of the given keys, duplicates collapsed, each with its own token', async () => {
    const seen = await service.run(['b', 'a', 'b', 'c'], (locks) => {
      expect(Object.isFrozen(locks)).toBe(true);
      expect(locks.map((lock) => lock.key)).toEqual(['b', 'a', 'c']);
      expect(['a', 'b', 'c'].every((key) => service.isHeld(key))).toBe(true);
      expect(service.current('c')).toBe(locks[2]);
      expect(service.current()).toBe(locks[0]);
      return locks.map((lock) => typeof lock.fencingToken);
    });
    expect(seen).toEqual(['bigint', 'bigint', 'bigint']);
    expect(provider.activeKeys).toBe(0);
  });

  it('collapses a set of one key to that key', async () => {
    await expect(service.run(['a', 'a'], (locks) => locks.map((lock) => lock.key))).resolves.toEqual(['a']);
  });

  it('holds every key together: a caller of any one key waits for the whole section', async () => {
    const order: string[] = [];
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const set = service.run(['x', 'y'], async () => {
      entered();
      await sleep(30);
      order.push('set');
    });
    await inside;
    await Promise.all([service.run('x', () => order.push('x')), service.run('y', () => order.push('y'))]);
    await set;
    expect(order).toEqual(['set', 'x', 'y']);
  });

  it('opposite-order sets never deadlock; two nested runs taken in opposite orders do (the naive way)', async () => {
    // The naive way: each call nests run(first, run(second)) in the order its arguments came.
    const nested = (first: string, second: string) =>
      service.run(
        first,
        async () => {
          await sleep(10);
          return service.run(second, () => 'done', { waitTimeoutMs: 200 });
        },
        { waitTimeoutMs: 200 },
      );
    const naive = await Promise.allSettled([nested('p', 'q'), nested('q', 'p')]);
    expect(naive.some((outcome) => outcome.status === 'rejected' && outcome.reason instanceof LockTimeoutError)).toBe(true);

    let inside = 0;
    let overlaps = 0;
    const transfer = async (from: string, to: string) =>
      service.run(
        [from, to],
        async () => {
          if (++inside > 1) overlaps++;
          await sleep(1);
          inside--;
        },
        { waitTimeoutMs: 5000 },
      );
    const started = Date.now();
    await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? transfer('p', 'q') : transfer('q', 'p'))));
    expect(overlaps).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('reject mode: one busy key fails the call with LockBusyError, and the keys taken before it are free at that moment', async () => {
    const m = await provider.acquire('m'); // held by someone else (not this async context)
    const error = await errorOf(service.run(['z', 'm', 'a'], () => 'ran', { mode: 'reject' }));
    expect(error).toBeInstanceOf(LockBusyError);
    // 'a' was taken before 'm' in canonical order, and released before the error came back.
    expect(provider.activeKeys).toBe(1);
    const a = await provider.tryAcquire('a');
    expect(a).not.toBeNull();
    await a!.release();
    await m.release();
  });

  it('one waitTimeoutMs bounds the whole set, and a timeout leaves no key taken', async () => {
    const b = await provider.acquire('b');
    const c = await provider.acquire('c');
    setTimeout(() => void b.release(), 150);
    const started = Date.now();
    const error = await errorOf(service.run(['a', 'b', 'c'], () => 'ran', { waitTimeoutMs: 300 }));
    const took = Date.now() - started;
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).waitTimeoutMs).toBe(300);
    // 150 ms for 'b', then only what was left for 'c': not 150 + 300.
    expect(took).toBeLessThan(420);
    expect(provider.activeKeys).toBe(1); // 'c' only: 'a' and 'b' were let go
    await c.release();
    expect(provider.activeKeys).toBe(0);
  });

  it('an abort while waiting lets go of the keys already taken before the call rejects', async () => {
    const b = await provider.acquire('b');
    const controller = new AbortController();
    const call = errorOf(service.run(['a', 'b'], () => 'ran', { signal: controller.signal }));
    await sleep(20);
    expect(provider.activeKeys).toBe(2);
    controller.abort(new Error('client gone'));
    const error = await call;
    expect((error as Error).message).toBe('client gone');
    expect(provider.activeKeys).toBe(1);
    await b.release();
  });

  it('a backend error on one key lets go of the keys taken before it', async () => {
    const released: string[] = [];
    const failing = new (class extends LockProvider {
      acquire(key: string): Promise<Lock> {
        if (key === 'k2') return Promise.reject(new Error('backend down'));
        return Promise.resolve(fakeLock(key, () => released.push(key)));
      }
      tryAcquire(key: string, _options?: AcquireOptions): Promise<Lock | null> {
        return this.acquire(key);
      }
      close(): Promise<void> {
        return Promise.resolve();
      }
    })();
    const onFailing = new LockService(failing);
    const error = await errorOf(onFailing.run(['k1', 'k2'], () => 'ran'));
    expect((error as Error).message).toBe('backend down');
    expect(released).toEqual(['k1']);
  });

  it('refuses an empty set (missing) and more than 16 distinct keys (invalid); 16 are accepted', async () => {
    expect(await errorOf(service.run([], () => 1))).toMatchObject({ name: 'SerializationKeyError', problem: 'missing' });
    const keys = Array.from({ length: 17 }, (_, i) => `k${i}`);
    const tooMany = await errorOf(service.run(keys, () => 1));
    expect(tooMany).toBeInstanceOf(SerializationKeyError);
    expect((tooMany as SerializationKeyError).problem).toBe('too-many');
    await expect(service.run(keys.slice(0, 16), (locks) => locks.length)).resolves.toBe(16);
    await expect(service.run([...keys.slice(0, 16), 'k0'], (locks) => locks.length)).resolves.toBe(16);
    expect(await errorOf(service.run(['a', ''], () => 1))).toMatchObject({ problem: 'missing' });
    expect(await errorOf(service.run(['a', 7 as unknown as string], () => 1))).toMatchObject({ problem: 'not-scalar' });
    expect(provider.activeKeys).toBe(0);
  });

  it('reentrancy: holding keys that sort first, the call takes the rest; otherwise it fails at once', async () => {
    await service.run('a', async (outer) => {
      await service.run(['b', 'a'], (locks) => {
        expect(locks[1]).toBe(outer); // joined, not taken again
        expect(service.isHeld('b')).toBe(true);
      });
      // The inner call released only what it took.
      expect(service.isHeld('a')).toBe(true);
      expect(provider.activeKeys).toBe(1);
    });
    await service.run('b', async () => {
      const started = Date.now();
      const error = await errorOf(service.run(['a', 'b'], () => 'ran'));
      expect(error).toBeInstanceOf(LockOrderError);
      expect((error as LockOrderError).missing).toEqual(['a']);
      expect(Date.now() - started).toBeLessThan(100);
    });
    // A nested call on one key of a set joins it.
    await service.run(['a', 'b'], async (locks) => {
      await expect(service.run('b', (lock) => lock)).resolves.toBe(locks[1]);
    });
    expect(provider.activeKeys).toBe(0);
  });

  it('reentrant: false: the set takes no part in the async context, but its section still sees its own locks', async () => {
    await service.run(
      ['a', 'b'],
      (locks) => {
        expect(service.current('b')).toBe(locks[1]);
        expect(service.currentSet()).toBe(locks);
        expect(service.isHeld('a')).toBe(false);
      },
      { reentrant: false },
    );
    expect(provider.activeKeys).toBe(0);
  });

  it('@Serialized with an array key, or a key function returning an array, on a service method', async () => {
    const bank = new Bank(service);
    await expect(bank.transfer('b', 'a')).resolves.toEqual(['account:b', 'account:a']);
    await expect(bank.settle(['z', 'y', 'z'])).resolves.toEqual(['account:z', 'account:y']);
    await expect(bank.settle([])).rejects.toMatchObject({ name: 'SerializationKeyError', problem: 'missing' });
    expect(provider.activeKeys).toBe(0);
  });

  it("locks.signal aborts when any lock of the set is lost, with that lock's error", async () => {
    const controllers = new Map<string, AbortController>();
    const fake = new (class extends LockProvider {
      acquire(key: string): Promise<Lock> {
        const controller = new AbortController();
        controllers.set(key, controller);
        return Promise.resolve(fakeLock(key, () => undefined, controller));
      }
      tryAcquire(key: string): Promise<Lock | null> {
        return this.acquire(key);
      }
      close(): Promise<void> {
        return Promise.resolve();
      }
    })();
    await new LockService(fake).run(['one', 'two'], async (locks) => {
      expect(locks.signal.aborted).toBe(false);
      expect(locks.lost).toBeUndefined();
      const lost = new LockLostError('two', 'lease expired');
      controllers.get('two')!.abort(lost);
      expect(locks.signal.aborted).toBe(true);
      expect(locks.signal.reason).toBe(lost);
    });
  });
});

function fakeLock(key: string, onRelease: () => void, controller = new AbortController()): Lock {
  return {
    key,
    fencingToken: 1n,
    signal: controller.signal,
    get lost() {
      return controller.signal.aborted ? (controller.signal.reason as LockLostError) : undefined;
    },
    extend: () => Promise.resolve(),
    release: () => {
      onRelease();
      return Promise.resolve();
    },
  };
}
