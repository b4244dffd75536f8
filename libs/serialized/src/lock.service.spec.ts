import * as validator from './config/acquire-options.validator';
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
    // Not even the synchronous fast path grants anything after shutdown.
    let ran = false;
    await expect(service.run('k', () => void (ran = true))).rejects.toBeInstanceOf(LockBackendError);
    expect(ran).toBe(false);
  });
});

/**
 * A call is validated once, at the service's boundary: the provider is reached
 * through its lines (the local layer), which do not check again. Counted by the
 * calls of the one validator.
 */
describe('LockService validates a call once', () => {
  const validations = () => [jest.spyOn(validator, 'validateAcquireOptions'), jest.spyOn(validator, 'validateAcquire')];
  const count = (spies: jest.SpyInstance[]) => spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
  afterEach(() => jest.restoreAllMocks());

  it.each([
    ['run, free key', false, 'wait'],
    ['run, busy key', true, 'wait'],
    ['run, busy key, reject mode', true, 'reject'],
  ] as const)('%s: one validation', async (_, busy, mode) => {
    const provider = new InMemoryLockProvider();
    const service = new LockService(provider);
    const holder = busy ? await provider.acquire('k') : undefined;
    const spies = validations();
    const running = service.run('k', () => 'ran', { mode, waitTimeoutMs: 1000 }).catch((error: Error) => error.name);
    await holder?.release();
    await running;
    expect(count(spies)).toBe(1);
    await provider.close();
  });

  it('a direct provider call is validated once by the provider itself', async () => {
    const provider = new InMemoryLockProvider();
    const spies = validations();
    const lock = await provider.acquire('k', { waitTimeoutMs: 1000 });
    const waiting = provider.acquire('k', { waitTimeoutMs: 1000 });
    await lock.release();
    await (await waiting).release();
    expect(count(spies)).toBe(2);
    await provider.close();
  });
});
