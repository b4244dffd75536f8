import { LockBusyError, LockService, LockTimeoutError, type Lock, type LockProvider } from 'nestjs-serialized';
import { sleep, uniqueId, waitFor } from '../support/timing';
import type { ProviderOptionsForTest } from './lock-provider.contract';

const errorOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/** A section that stays inside until `open(name)`; records who is inside at once, and anyone beside a writer. */
class Room {
  readonly inside = new Set<string>();
  most = 0;
  readonly entered: string[] = [];
  readonly overlaps: string[] = [];
  private readonly doors = new Map<string, () => void>();

  enter(name: string, alone = false): Promise<void> {
    if (alone && this.inside.size > 0) this.overlaps.push(`${name} beside ${[...this.inside].join(',')}`);
    for (const other of this.inside) if (other.startsWith('W')) this.overlaps.push(`${name} beside ${other}`);
    this.inside.add(name);
    this.entered.push(name);
    this.most = Math.max(this.most, this.inside.size);
    return new Promise<void>((resolve) => this.doors.set(name, resolve)).then(() => void this.inside.delete(name));
  }

  /** Lets `name` out, once it is inside. */
  async open(name: string): Promise<void> {
    await waitFor(() => this.doors.has(name), 10_000, `${name} inside`);
    this.doors.get(name)!();
  }

  /** Waits until exactly `names` are inside (sorted compare). */
  async holds(...names: string[]): Promise<void> {
    await waitFor(() => [...this.inside].sort().join() === [...names].sort().join(), 10_000, `inside: ${names.join(',')}`);
  }
}

/** What the holders section needs of the contract suite. */
export interface HoldersHarness {
  /** A provider and the instance the other holder of a check uses (itself, or a peer sharing its backend). */
  makeWithOther(
    peer: boolean,
    options?: ProviderOptionsForTest,
  ): Promise<{ provider: LockProvider; locks: LockService; other: LockProvider; otherLocks: LockService }>;
  /** Nothing left of the provider's keys once everyone left. */
  noLeftovers(provider: LockProvider): Promise<void>;
}

const HOLDERS = [
  ['this instance', false],
  ['another instance', true],
] as const;

/**
 * Several holders of one key (`concurrency`, `shared`; docs/semantics.md, "Several
 * holders of one key"), for every driver that holds a key together. A check whose other callers
 * may live in another instance runs both ways; order across instances is only
 * asserted where the backend keeps it (a reader behind a writer queued there).
 */
export function describeHoldersContract(harness: HoldersHarness): void {
  describe('several holders of one key (concurrency, shared)', () => {
    describe.each(HOLDERS)('the other callers in %s', (_where, peer) => {
      it('concurrency: 3 lets exactly 3 in at once, and everyone through, each grant with its own token', async () => {
        const { provider, locks, otherLocks } = await harness.makeWithOther(peer);
        const key = uniqueId('group');
        const room = new Room();
        const tokens: bigint[] = [];
        const names = Array.from({ length: 8 }, (_, i) => `c${i}`);
        const runs = names.map((name, i) =>
          (i % 2 === 0 ? locks : otherLocks).run(
            key,
            (lock) => {
              tokens.push(lock.fencingToken);
              return room.enter(name);
            },
            { concurrency: 3 },
          ),
        );
        await waitFor(() => room.inside.size === 3, 10_000, 'three inside');
        await sleep(50);
        expect(room.inside.size).toBe(3);
        // Let them out one at a time: the room refills to 3 while callers wait.
        while (room.entered.length < names.length || room.inside.size > 0) {
          const [first] = room.inside;
          await room.open(first);
          await waitFor(() => !room.inside.has(first), 10_000, `${first} out`);
          const left = names.length - room.entered.length;
          if (left > 0) await waitFor(() => room.inside.size === 3, 10_000, 'three inside again');
        }
        await Promise.all(runs);
        expect(room.most).toBe(3);
        expect(room.entered.sort()).toEqual([...names].sort());
        expect(new Set(tokens).size).toBe(names.length);
        if (!peer) expect(tokens.every((token, i) => i === 0 || token > tokens[i - 1])).toBe(true);
        await harness.noLeftovers(provider);
      });

      it('readers hold together, a writer alone; a reader behind a waiting writer waits for it', async () => {
        const { provider, locks, otherLocks } = await harness.makeWithOther(peer);
        const key = uniqueId('doc');
        const room = new Room();
        const r1 = locks.run(key, () => room.enter('R1'), { shared: true });
        const r2 = otherLocks.run(key, () => room.enter('R2'), { shared: true });
        await room.holds('R1', 'R2');
        const w = otherLocks.run(key, () => room.enter('W', true));
        await sleep(100);
        const r3 = otherLocks.run(key, () => room.enter('R3'), { shared: true });
        await sleep(100);
        await room.open('R1');
        await room.holds('R2');
        await sleep(50);
        expect([...room.inside]).toEqual(['R2']); // R3 does not pass the waiting writer
        await room.open('R2');
        await room.holds('W');
        await room.open('W');
        await room.holds('R3');
        await room.open('R3');
        await Promise.all([r1, r2, w, r3]);
        expect(room.overlaps).toEqual([]);
        expect(room.entered.slice(2)).toEqual(['W', 'R3']);
        await harness.noLeftovers(provider);
      });

      it('a writer behind a stream of readers gets in once the readers ahead of it leave', async () => {
        const { provider, locks, otherLocks } = await harness.makeWithOther(peer);
        const key = uniqueId('doc');
        const room = new Room();
        const ahead = [0, 1, 2].map((i) => locks.run(key, () => room.enter(`R${i}`), { shared: true }));
        await room.holds('R0', 'R1', 'R2');
        const writer = otherLocks.run(key, () => room.enter('W', true));
        await sleep(100);
        // Readers that come after the writer wait for it, though readers hold the key.
        const stream = [3, 4, 5].map((i) => locks.run(key, () => room.enter(`R${i}`), { shared: true }));
        await sleep(100);
        expect([...room.inside].sort()).toEqual(['R0', 'R1', 'R2']);
        for (const name of ['R0', 'R1', 'R2']) await room.open(name);
        await room.holds('W');
        await room.open('W');
        await room.holds('R3', 'R4', 'R5');
        for (const name of ['R3', 'R4', 'R5']) await room.open(name);
        await Promise.all([...ahead, writer, ...stream]);
        expect(room.overlaps).toEqual([]);
        expect(room.entered.indexOf('W')).toBe(3);
        await harness.noLeftovers(provider);
      });

      it('reject mode and tryAcquire: refused when full; maxPending, timeout and abort as for one holder', async () => {
        const { provider, other, otherLocks } = await harness.makeWithOther(peer);
        const key = uniqueId('full');
        let open!: () => void;
        const gate = new Promise<void>((resolve) => (open = resolve));
        const held = [await provider.acquire(key, { concurrency: 2 }), await other.acquire(key, { concurrency: 2 })];
        expect(await provider.tryAcquire(key, { concurrency: 2 })).toBeNull();
        expect(await other.tryAcquire(key, { concurrency: 2 })).toBeNull();
        expect(await other.tryAcquire(key, { shared: true })).toBeNull();
        expect(await other.tryAcquire(key)).toBeNull();
        expect(await errorOf(otherLocks.run(key, () => 'x', { concurrency: 2, mode: 'reject' }))).toBeInstanceOf(LockBusyError);
        let third: Lock | undefined;
        const waiter = otherLocks.run(key, (lock) => ((third = lock), gate), { concurrency: 2, maxPending: 1, waitTimeoutMs: 20_000 });
        await sleep(100);
        expect(await errorOf(otherLocks.run(key, () => 'x', { concurrency: 2, maxPending: 1 }))).toMatchObject({ reason: 'max-pending' });
        expect(await errorOf(other.acquire(key, { concurrency: 2, waitTimeoutMs: 50 }))).toBeInstanceOf(LockTimeoutError);
        const controller = new AbortController();
        const aborted = errorOf(other.acquire(key, { concurrency: 2, signal: controller.signal }));
        controller.abort(new Error('left'));
        expect(await aborted).toMatchObject({ message: 'left' });
        await held[0].release();
        await waitFor(() => third !== undefined, 10_000, 'the waiter in');
        expect(third!.fencingToken > held[1].fencingToken).toBe(true);
        open();
        await waiter;
        await held[1].release();
        // Free again: a writer takes it.
        await waitFor(
          async () => {
            const alone = await provider.tryAcquire(key);
            await alone?.release();
            return alone !== null;
          },
          5_000,
          'the key free for a writer',
        );
        await harness.noLeftovers(provider);
      });
    });

    it('an upgrade (alone while the context holds the key shared) fails at once; shared inside shared joins', async () => {
      const { provider, locks } = await harness.makeWithOther(false);
      const key = uniqueId('upgrade');
      const nested = await locks.run(
        key,
        async (outer: Lock) => {
          const joined = await locks.run(key, (inner) => inner === outer, { shared: true });
          const upgrade = await errorOf(locks.run(key, () => 'never'));
          return { joined, upgrade };
        },
        { shared: true },
      );
      expect(nested.joined).toBe(true);
      expect(nested.upgrade).toMatchObject({ name: 'LockUpgradeError' });
      await harness.noLeftovers(provider);
    });
  });
}
