import { LockBackendError } from './errors';
import { LockService } from './lock.service';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';

/**
 * `run` on a free key of a provider that grants synchronously (in-memory) skips
 * the promise chain of acquiring and releasing. These pin down that it still
 * behaves exactly as the usual path: whatever `fn` does, the key is released.
 */
describe('LockService.run on a key it can take at once', () => {
  let provider: InMemoryLockProvider;
  let service: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    service = new LockService(provider);
  });

  afterEach(async () => {
    await provider.close();
  });

  it('takes a free key without waiting: fn starts before run returns', async () => {
    let started = false;
    const running = service.run('k', async () => {
      started = true;
    });
    expect(started).toBe(true);
    await running;
    expect(provider.activeKeys).toBe(0);
  });

  it('releases the key when fn throws synchronously, and rejects with that error', async () => {
    const error = new Error('sync boom');
    await expect(
      service.run('k', () => {
        throw error;
      }),
    ).rejects.toBe(error);
    expect(provider.activeKeys).toBe(0);
    await expect(service.run('k', () => 'next', { mode: 'reject' })).resolves.toBe('next');
  });

  it('releases the key when fn rejects, and rejects with that error', async () => {
    await expect(service.run('k', async () => Promise.reject(new Error('async boom')))).rejects.toThrow('async boom');
    expect(provider.activeKeys).toBe(0);
  });

  it('hands the key to the waiter that queued while fn ran, and resolves with the value of fn', async () => {
    const order: string[] = [];
    let release!: () => void;
    const first = service.run('k', () => new Promise<string>((resolve) => (release = () => resolve('first'))));
    const second = service.run('k', () => void order.push('second ran'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    release();
    await expect(first).resolves.toBe('first');
    await second;
    expect(order).toEqual(['second ran']);
    expect(provider.activeKeys).toBe(0);
  });

  it('counts the key as held inside fn (a nested run on it runs at once), and not after', async () => {
    let heldInside = false;
    const nested = await service.run('k', async () => {
      heldInside = service.isHeld('k');
      return service.run('k', () => 'nested ran', { mode: 'reject' });
    });
    expect([heldInside, nested, service.isHeld('k')]).toEqual([true, 'nested ran', false]);
  });

  it('leaves an already aborted call, an invalid key and a closing provider to the usual path and its errors', async () => {
    const controller = new AbortController();
    controller.abort(new Error('caller left'));
    await expect(service.run('k', () => 'ran', { signal: controller.signal })).rejects.toThrow('caller left');
    await expect(service.run('', () => 'ran')).rejects.toThrow(/missing/);
    // Redis and PostgreSQL would see U+FFFD for a lone surrogate: refused on every provider, fast path included.
    const fn = jest.fn();
    await expect(service.run('\ud800', fn)).rejects.toMatchObject({ name: 'SerializationKeyError', problem: 'unencodable' });
    await expect(service.run('k', fn, { waitTimeoutMs: -1 })).rejects.toThrow('waitTimeoutMs=-1 is invalid');
    expect(fn).not.toHaveBeenCalled();
    expect(provider.activeKeys).toBe(0);
    await provider.close();
    await expect(service.run('k', () => 'ran')).rejects.toBeInstanceOf(LockBackendError);
    expect(provider.acquireNow('k', {})).toBeUndefined();
  });
});

/**
 * A call is validated once, at the service's boundary (issue 22): the provider is
 * asked through its `*Validated` methods and does not check again. Counted by the
 * reads of `handoff`, which only validation reads on the in-memory provider.
 */
describe('LockService validates a call once', () => {
  const counting = (extra: object = {}) => {
    let reads = 0;
    const options = {
      ...extra,
      get handoff() {
        reads++;
        return 'strict' as const;
      },
    };
    return { options, reads: () => reads };
  };

  it.each([
    ['run, free key', false, 'wait'],
    ['run, busy key', true, 'wait'],
    ['run, busy key, reject mode', true, 'reject'],
  ] as const)('%s: the options are read by one validation', async (_, busy, mode) => {
    const provider = new InMemoryLockProvider();
    const service = new LockService(provider);
    const direct = jest.spyOn(provider, 'acquire');
    const directTry = jest.spyOn(provider, 'tryAcquire');
    const holder = busy ? await provider.acquire('k') : undefined;
    const { options, reads } = counting({ mode });
    const running = service.run('k', () => 'ran', options).catch((error: Error) => error.name);
    await holder?.release();
    await running;
    expect(reads()).toBe(1);
    // Only the holder above called the validating entry points.
    expect(direct.mock.calls.length + directTry.mock.calls.length).toBe(busy ? 1 : 0);
    await provider.close();
  });

  it('a direct provider call is validated once by the provider itself', async () => {
    const provider = new InMemoryLockProvider();
    const { options, reads } = counting();
    const lock = await provider.acquire('k', options);
    const waiting = provider.acquire('k', options);
    await lock.release();
    await (await waiting).release();
    expect(reads()).toBe(2);
    await provider.close();
  });
});
