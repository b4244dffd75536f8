import { LockBusyError, LockTimeoutError, LockUpgradeError } from './errors';
import type { Lock } from './lock.interface';
import { LockService } from './lock.service';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const errorOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/** A section that stays inside until `open()` is called; records who is inside at once. */
class Room {
  inside = new Set<string>();
  most = 0;
  entered: string[] = [];
  /** Who was inside beside a writer (a name per overlap). */
  overlaps: string[] = [];
  private doors = new Map<string, () => void>();

  enter(name: string, alone = false): Promise<void> {
    if (alone && this.inside.size > 0) this.overlaps.push(`${name} beside ${[...this.inside].join(',')}`);
    for (const other of this.inside) if (other.startsWith('W')) this.overlaps.push(`${name} beside ${other}`);
    this.inside.add(name);
    this.entered.push(name);
    this.most = Math.max(this.most, this.inside.size);
    return new Promise<void>((resolve) => this.doors.set(name, resolve)).then(() => {
      this.inside.delete(name);
    });
  }

  open(name: string): void {
    this.doors.get(name)!();
  }
}

describe('several holders of one key (concurrency, shared) on the in-memory driver', () => {
  let provider: InMemoryLockProvider;
  let service: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    service = new LockService(provider);
  });
  afterEach(async () => {
    await provider.close();
    expect(provider.activeKeys).toBe(0);
  });

  it('concurrency: 3 lets exactly 3 in at once, in arrival order, each with its own increasing token', async () => {
    const room = new Room();
    const tokens: bigint[] = [];
    const names = Array.from({ length: 8 }, (_, i) => `c${i}`);
    const runs = names.map((name) =>
      service.run(
        'tenant',
        (lock) => {
          tokens.push(lock.fencingToken);
          return room.enter(name);
        },
        { concurrency: 3 },
      ),
    );
    await tick();
    expect(room.entered).toEqual(['c0', 'c1', 'c2']);
    for (const name of names) {
      room.open(name === 'c0' ? 'c1' : name === 'c1' ? 'c0' : name);
      await tick();
    }
    await Promise.all(runs);
    expect(room.most).toBe(3);
    expect(room.entered).toEqual(names);
    expect(tokens.every((token, i) => i === 0 || token > tokens[i - 1])).toBe(true);
  });

  it('readers hold together, a writer alone; a reader behind a waiting writer waits for it', async () => {
    const room = new Room();
    const r1 = service.run('doc', () => room.enter('R1'), { shared: true });
    const r2 = service.run('doc', () => room.enter('R2'), { shared: true });
    const w = service.run('doc', () => room.enter('W', true));
    const r3 = service.run('doc', () => room.enter('R3'), { shared: true });
    await tick();
    expect([...room.inside]).toEqual(['R1', 'R2']);
    room.open('R1');
    await tick();
    expect([...room.inside]).toEqual(['R2']); // R3 does not pass the waiting writer
    room.open('R2');
    await tick();
    expect([...room.inside]).toEqual(['W']);
    room.open('W');
    await tick();
    expect([...room.inside]).toEqual(['R3']);
    room.open('R3');
    await Promise.all([r1, r2, w, r3]);
    expect(room.overlaps).toEqual([]);
    expect(room.entered).toEqual(['R1', 'R2', 'W', 'R3']);
  });

  it('a writer behind a stream of readers gets in once the readers ahead of it leave', async () => {
    const room = new Room();
    const ahead = [0, 1, 2].map((i) => service.run('doc', () => room.enter(`R${i}`), { shared: true }));
    const writer = service.run('doc', () => room.enter('W', true));
    const stream: Promise<void>[] = [];
    for (let i = 3; i < 9; i++) {
      stream.push(service.run('doc', () => room.enter(`R${i}`), { shared: true }));
      await tick();
      room.open(`R${i - 3}`);
      await tick();
      if (room.inside.has('W')) break;
    }
    expect([...room.inside]).toEqual(['W']);
    room.open('W');
    await tick();
    expect([...room.inside].sort()).toEqual(['R3', 'R4', 'R5']);
    for (const name of ['R3', 'R4', 'R5']) room.open(name);
    await Promise.all([...ahead, writer, ...stream]);
    expect(room.overlaps).toEqual([]);
  });

  it('callers passing different limits: never more holders than the smallest limit among holders and newcomer', async () => {
    const room = new Room();
    const wide = [0, 1].map((i) => service.run('k', () => room.enter(`wide${i}`), { concurrency: 3 }));
    const narrow = service.run('k', () => room.enter('narrow'), { concurrency: 2 });
    const alone = service.run('k', () => room.enter('Walone', true));
    await tick();
    expect([...room.inside]).toEqual(['wide0', 'wide1']); // a third would make 3 > 2
    room.open('wide0');
    await tick();
    expect([...room.inside]).toEqual(['wide1', 'narrow']);
    room.open('wide1');
    room.open('narrow');
    await tick();
    expect([...room.inside]).toEqual(['Walone']);
    room.open('Walone');
    await Promise.all([...wide, narrow, alone]);
    expect(room.most).toBe(2);
    expect(room.overlaps).toEqual([]);
    // The other way round: holders that accept 2 keep a newcomer that accepts 3 out.
    const late = new Room();
    const tight = [0, 1].map((i) => service.run('k', () => late.enter(`tight${i}`), { concurrency: 2 }));
    const loose = service.run('k', () => late.enter('loose'), { concurrency: 3 });
    await tick();
    expect([...late.inside]).toEqual(['tight0', 'tight1']);
    late.open('tight0');
    await tick();
    expect([...late.inside]).toEqual(['tight1', 'loose']);
    late.open('tight1');
    late.open('loose');
    await Promise.all([...tight, loose]);
  });

  it('reject mode and tryAcquire: refused when full; maxPending, timeout and abort as for one holder', async () => {
    const held = await Promise.all([provider.acquire('k', { concurrency: 2 }), provider.acquire('k', { concurrency: 2 })]);
    expect(await provider.tryAcquire('k', { concurrency: 2 })).toBeNull();
    expect(await errorOf(service.run('k', () => 'x', { concurrency: 2, mode: 'reject' }))).toBeInstanceOf(LockBusyError);
    const waiter = provider.acquire('k', { concurrency: 2, maxPending: 1 });
    expect(await errorOf(provider.acquire('k', { concurrency: 2, maxPending: 1 }))).toMatchObject({ reason: 'max-pending' });
    expect(await errorOf(provider.acquire('k', { concurrency: 2, waitTimeoutMs: 20 }))).toBeInstanceOf(LockTimeoutError);
    const controller = new AbortController();
    const aborted = errorOf(provider.acquire('k', { concurrency: 2, signal: controller.signal }));
    controller.abort(new Error('left'));
    expect(await aborted).toMatchObject({ message: 'left' });
    await held[0].release();
    const third = await waiter;
    expect(third.fencingToken > held[1].fencingToken).toBe(true);
    await Promise.all([held[1].release(), third.release()]);
    // Free again: a writer takes it at once.
    const alone = await provider.tryAcquire('k');
    expect(alone).not.toBeNull();
    await alone!.release();
  });

  it('inspect lists every holder, shared ones as shared', async () => {
    const readers = await Promise.all([0, 1].map(() => provider.acquire('doc', { shared: true })));
    const waiter = provider.acquire('doc');
    const info = await service.inspect('doc');
    expect(info.holders.map((holder) => [holder.fencingToken, holder.shared])).toEqual(readers.map((lock) => [lock.fencingToken, true]));
    expect(info.waitingHere).toBe(1);
    await Promise.all(readers.map((lock) => lock.release()));
    await (await waiter).release();
    expect((await service.inspect('doc')).holders).toEqual([]);
  });

  it('an upgrade (alone while the context holds the key shared) fails at once; shared inside shared joins', async () => {
    const nested = await service.run(
      'doc',
      async (outer: Lock) => {
        const joined = await service.run('doc', (inner) => inner === outer, { shared: true });
        const upgrade = await errorOf(service.run('doc', () => 'never'));
        const upgradeInSet = await errorOf(service.run(['doc', 'other'], () => 'never'));
        return { joined, upgrade, upgradeInSet };
      },
      { shared: true },
    );
    expect(nested.joined).toBe(true);
    expect(nested.upgrade).toBeInstanceOf(LockUpgradeError);
    expect((nested.upgrade as Error).message).toMatch(/"doc".*shared/);
    expect(nested.upgradeInSet).toBeInstanceOf(LockUpgradeError);
    // Alone inside alone, or shared inside alone, joins.
    expect(await service.run('doc', () => service.run('doc', () => 'in', { shared: true }))).toBe('in');
  });

  it('a key set with shared: each key is held shared', async () => {
    const room = new Room();
    const a = service.run(['x', 'y'], () => room.enter('R1'), { shared: true });
    const b = service.run(['y', 'x'], () => room.enter('R2'), { shared: true });
    await tick();
    expect([...room.inside]).toEqual(['R1', 'R2']);
    room.open('R1');
    room.open('R2');
    await Promise.all([a, b]);
  });

  it('refuses bad limits with errors naming them, and changes nothing', async () => {
    for (const concurrency of [0, 1001, 1.5, Number.NaN]) {
      const error = await errorOf(service.run('k', () => 'x', { concurrency }));
      expect(error).toBeInstanceOf(RangeError);
      expect((error as Error).message).toMatch(/concurrency=.* is invalid: accepts an integer 1-1000/);
    }
    expect(await errorOf(service.run('k', () => 'x', { shared: 'yes' as never }))).toBeInstanceOf(TypeError);
    const both = await errorOf(provider.acquire('k', { shared: true, concurrency: 2 }));
    expect((both as Error).message).toMatch(/shared=true with concurrency=2/);
    const inTransaction = await errorOf(service.run('k', () => 'x', { concurrency: 2, transaction: true }));
    expect((inTransaction as Error).message).toMatch(/concurrency=2 is not available in transaction mode/);
    expect(provider.activeKeys).toBe(0);
  });
});
