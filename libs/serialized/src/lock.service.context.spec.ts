import type { Lock } from './lock.interface';
import type { LockContext } from './lock.context';
import { LockService } from './lock.service';
import { InterceptedCall } from './metadata/intercepted.call';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

/** How the async context answers right now: what nested calls and `current()` see. */
function seen(service: LockService, ...keys: string[]): { current: bigint | undefined; held: string[] } {
  return { current: service.current()?.fencingToken, held: keys.filter((key) => service.isHeld(key)) };
}

/** The sections the current async context links to (innermost first): what it keeps alive. */
function chainLength(service: LockService): number {
  let length = 0;
  for (let at = (service as unknown as { context: { getStore(): LockContext | undefined } }).context.getStore(); at; at = at.outer)
    length++;
  return length;
}

// The async context `run` keeps for reentrancy: a section's own context, left in place
// after a synchronous section ended (instead of a second AsyncLocalStorage frame), must
// answer exactly as the caller's did.
describe('LockService: the async context of sections', () => {
  let provider: InMemoryLockProvider;
  let service: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider({ waitTimeoutMs: 1000 });
    service = new LockService(provider);
  });
  afterEach(async () => {
    await provider.close();
  });

  it('after a synchronous section, the caller holds nothing: the next call on the key acquires it anew, then the key is free', async () => {
    const tokens: bigint[] = [];
    await service.run('k', (lock) => void tokens.push(lock.fencingToken));
    expect(seen(service, 'k')).toEqual({ current: undefined, held: [] });
    // Called synchronously after the first ended, in the same context: a new acquisition, not a join.
    const second = service.run('k', (lock) => {
      tokens.push(lock.fencingToken);
      return seen(service, 'k');
    });
    expect(seen(service, 'k')).toEqual({ current: undefined, held: [] });
    await expect(second).resolves.toEqual({ current: tokens[1], held: ['k'] });
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
    expect(provider.activeKeys).toBe(0);
  });

  it('two synchronous sections in a row on a key joined by neither: an async section after them still owns the key alone', async () => {
    service.run('a', () => undefined);
    service.run('b', () => undefined);
    let release!: () => void;
    const holder = service.run('a', () => new Promise<void>((resolve) => (release = resolve)));
    // Outside the holder's section: a sibling call queues behind it instead of joining it.
    const order: string[] = [];
    const sibling = service.run('a', () => void order.push('sibling'));
    expect(seen(service, 'a', 'b')).toEqual({ current: undefined, held: [] });
    await macrotask();
    expect(order).toEqual([]);
    release();
    await Promise.all([holder, sibling]);
    expect(order).toEqual(['sibling']);
  });

  it('a nested synchronous section on the same key joins the holder with its lock, and the holder still holds it afterwards', async () => {
    await service.run('k', async (outer) => {
      const inner = await service.run('k', (lock) => {
        expect(lock).toBe(outer);
        return service.run('k', (again) => again);
      });
      expect(inner).toBe(outer);
      expect(seen(service, 'k')).toEqual({ current: outer.fencingToken, held: ['k'] });
      await macrotask();
      expect(service.current('k')).toBe(outer);
    });
    expect(seen(service, 'k')).toEqual({ current: undefined, held: [] });
  });

  it('inside a section, a synchronous section on another key ends without a trace: the enclosing lock is current again, across awaits', async () => {
    await service.run('outer', async (outer) => {
      service.run('inner', (inner) => expect(service.current()).toBe(inner));
      expect(seen(service, 'outer', 'inner')).toEqual({ current: outer.fencingToken, held: ['outer'] });
      expect(service.current('inner')).toBeUndefined();
      await macrotask();
      expect(seen(service, 'outer', 'inner')).toEqual({ current: outer.fencingToken, held: ['outer'] });
      // The inner key is free again: taken at once by a call in this context.
      await expect(service.run('inner', () => 'again', { mode: 'reject' })).resolves.toBe('again');
    });
  });

  it('a synchronous section that throws leaves the caller context as it was', async () => {
    await service.run('outer', async (outer) => {
      await expect(
        service.run('inner', () => {
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(seen(service, 'outer', 'inner')).toEqual({ current: outer.fencingToken, held: ['outer'] });
    });
    expect(provider.activeKeys).toBe(0);
  });

  it('under a joined key, an intercepted call or an unjoinable lock, a synchronous section puts the caller context back', async () => {
    await service.run('a', async (a) => {
      await service.run('b', async () => {
        // Joining 'a' makes it the innermost section again, over 'b'.
        await service.run('a', async () => {
          service.run('c', () => undefined);
          expect(service.current()).toBe(a);
        });
      });
    });
    const held = await service.acquire('h');
    const interceptedCall = new InterceptedCall(() => undefined);
    service.runHolding(
      held,
      () => {
        service.run('c', () => undefined);
        expect([service.interceptedCall(), service.current()]).toEqual([interceptedCall, held.lock]);
      },
      interceptedCall,
    );
    await held.release();
    const alone = await service.acquire('x', { reentrant: false });
    service.runHolding(
      alone,
      () => {
        service.run('c', () => undefined);
        expect([service.interceptedCall(), service.current(), service.isHeld('x')]).toEqual([interceptedCall, alone.lock, false]);
      },
      interceptedCall,
    );
    await alone.release();
  });

  it('concurrent sections in unrelated contexts each see their own key only; a context outside sees none', async () => {
    const seenInside: Record<string, ReturnType<typeof seen>[]> = { a: [], b: [] };
    const section = (key: string) =>
      service.run(key, async (lock: Lock) => {
        for (let i = 0; i < 3; i++) {
          seenInside[key].push(seen(service, 'a', 'b'));
          await macrotask();
        }
        return lock.fencingToken;
      });
    const [a, b] = await Promise.all([
      section('a'),
      section('b'),
      (async () => {
        await macrotask();
        expect(seen(service, 'a', 'b')).toEqual({ current: undefined, held: [] });
      })(),
    ]);
    expect(seenInside.a).toEqual(Array(3).fill({ current: a, held: ['a'] }));
    expect(seenInside.b).toEqual(Array(3).fill({ current: b, held: ['b'] }));
  });

  it('a timer set in a synchronous section runs after it ended: its call on the key acquires it anew', async () => {
    let first!: bigint;
    const later = new Promise<{ held: boolean; token: bigint }>((resolve) => {
      void service.run('k', (lock) => {
        first = lock.fencingToken;
        setTimeout(() => {
          const held = service.isHeld('k');
          void service.run('k', (again) => resolve({ held, token: again.fencingToken }), { mode: 'reject' });
        }, 0);
      });
    });
    const { held, token } = await later;
    expect(held).toBe(false);
    expect(token).toBeGreaterThan(first);
  });

  it('a waiter handed the key runs its synchronous section as its own: nested calls join it, and after it the key is free', async () => {
    let release!: () => void;
    const holder = service.run('k', () => new Promise<void>((resolve) => (release = resolve)));
    let spawned!: Promise<boolean>;
    const waiter = service.run('k', (lock) => {
      spawned = new Promise((resolve) => setTimeout(() => resolve(service.isHeld('k')), 0));
      return [service.isHeld('k'), service.current() === lock];
    });
    release();
    await holder;
    await expect(waiter).resolves.toEqual([true, true]);
    expect(seen(service, 'k')).toEqual({ current: undefined, held: [] });
    await expect(spawned).resolves.toBe(false);
    await expect(service.run('k', () => 'free', { mode: 'reject' })).resolves.toBe('free');
  });

  it('work that spawns work on and on keeps only the sections still held in its context', async () => {
    let depth = 0;
    const lengths: number[] = [];
    await new Promise<void>((done) => {
      const step = (): void => {
        void service.run(`k${depth}`, () => {
          lengths.push(chainLength(service));
          if (++depth < 50) setTimeout(step, 0);
          else done();
        });
      };
      step();
    });
    // Each section ended before the next began: a context never links to more than its own.
    expect(Math.max(...lengths)).toBe(1);
    await service.run('outer', async () => {
      await service.run('inner', () => expect(chainLength(service)).toBe(2));
    });
  });
});
