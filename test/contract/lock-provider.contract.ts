import {
  LockBackendError,
  LockBusyError,
  LockLostError,
  LockService,
  LockTimeoutError,
  type Lock,
  type LockProvider,
  type RunOptions,
} from 'nestjs-serialized';
import { performance } from 'node:perf_hooks';
import { deferred, OverlapProbe, sleep, uniqueId, waitFor } from '../support/timing';
import { describeHoldersContract } from './holders.contract';
import { describeRunContract } from './run.contract';

export interface ProviderOptionsForTest {
  leaseMs?: number;
  waitTimeoutMs?: number;
  maxPending?: number;
  maxPendingTotal?: number;
  shutdownGraceMs?: number;
}

/** What each backend plugs into the shared contract suite. */
export interface ContractSubject {
  readonly name: string;
  /** A fresh provider with its own key namespace, so tests never see each other's keys. */
  create(options?: ProviderOptionsForTest): Promise<LockProvider>;
  /**
   * "Someone else": another provider instance sharing `provider`'s backend and key
   * namespace (same keyPrefix) over connections of its own, as a second app
   * instance would. Every check in which another holder takes part runs with the
   * other holder here. The in-memory provider cannot share state across
   * instances, so its peer is `provider` itself (those checks then repeat the
   * same-instance case).
   */
  createPeer(provider: LockProvider, options?: ProviderOptionsForTest): Promise<LockProvider>;
  /**
   * Whether the provider renews or watches held locks (Redis leases, PostgreSQL
   * sessions). Such a provider aborts a lock's signal when it stops doing so
   * (shutdown past its grace period); an in-memory lock is neither, so nothing stops.
   */
  readonly watchesHeldLocks: boolean;
  /** Whether a free key is granted synchronously (the in-memory provider): `LockService.run` then runs a section before it returns. */
  readonly grantsNow: boolean;
  /**
   * The lease of the check that a lock outlives its lease while held (600 ms when
   * unset): short, so the check waits little, and long enough that a busy host's
   * scheduling alone cannot make a renewal late. A provider that renews nothing (an
   * in-memory lock has no lease to miss) can take the least `leaseMs` accepts.
   */
  readonly shortLeaseMs?: number;
  /**
   * What the backend still holds for this provider's namespace once every lock was
   * released and every waiter left: lock keys, queue entries, sessions holding
   * advisory locks, map entries, timers. Must be 0.
   */
  leftovers(provider: LockProvider): Promise<number>;
  /**
   * Locks the backend shows for this provider that nobody in it owns — no holder,
   * hand-off, attempt or release of its own — found and released now. Must be 0
   * after every check (PostgreSQL: the session audit). Providers without sessions omit it.
   */
  unownedLocks?(provider: LockProvider): Promise<number>;
  /** Whether one key may have several holders at once (`concurrency`, `shared`): the holders section runs (test/contract/holders.contract.ts). */
  readonly holdsTogether?: boolean;
  /** Optional clean-up after the whole file, both contracts (close shared clients). */
  afterAll?(): Promise<void>;
}

/** Where the other holder of a check lives. */
const HOLDERS = [
  ['this instance', false],
  ['another instance', true],
] as const;

/**
 * The behaviour every provider must share (docs/semantics.md, "Guarantees"). Written once,
 * run against the in-memory, Redis and PostgreSQL providers, so they cannot drift.
 *
 * "Someone else holds the key" means another provider instance sharing the
 * backend (`createPeer`), never the provider itself: checks that involve another
 * holder run both ways, with the holder in this instance (the provider's own,
 * in-process queue) and in another instance (the backend's queue).
 */
export function describeLockProviderContract(subject: ContractSubject): void {
  // After every test of the file, the run contract's too: its instances use the
  // subject's shared clients (a Cluster client the app passes in), which only this closes.
  afterAll(async () => {
    await subject.afterAll?.();
  });
  describe(`LockProvider contract: ${subject.name}`, () => {
    const open = new Set<LockProvider>();
    const make = async (options?: ProviderOptionsForTest) => {
      const provider = await subject.create(options);
      open.add(provider);
      return { provider, locks: new LockService(provider) };
    };
    /** A provider and the instance the other holder of a check uses (itself, or a peer). */
    const makeWithOther = async (peer: boolean, options?: ProviderOptionsForTest) => {
      const { provider, locks } = await make(options);
      const other = peer ? await subject.createPeer(provider, options) : provider;
      open.add(other);
      return { provider, locks, other, otherLocks: other === provider ? locks : new LockService(other) };
    };
    const noLeftovers = async (provider: LockProvider) => {
      await waitFor(async () => (await subject.leftovers(provider)) === 0, 3000, 'no leftovers').catch(() => undefined);
      expect(await subject.leftovers(provider)).toBe(0);
    };

    afterEach(async () => {
      const providers = [...open];
      open.clear();
      // Whatever the check left running, no lock on the backend may be without an owner.
      const unowned = subject.unownedLocks ? await Promise.all(providers.map((p) => subject.unownedLocks!(p))) : [];
      await Promise.all(providers.map((p) => p.close()));
      expect({ unownedLocks: unowned.reduce((sum, n) => sum + n, 0) }).toEqual({ unownedLocks: 0 });
    });
    if (subject.holdsTogether) describeHoldersContract({ makeWithOther, noLeftovers });

    it('excludes: concurrent read-modify-write on one key loses no update and never overlaps', async () => {
      const { locks } = await make();
      const key = uniqueId('exclusion');
      const probe = new OverlapProbe();
      let counter = 0;
      await Promise.all(
        Array.from({ length: 25 }, () =>
          locks.run(key, () =>
            probe.run(async () => {
              const read = counter;
              await sleep(2);
              counter = read + 1;
            }),
          ),
        ),
      );
      expect(counter).toBe(25);
      expect(probe.maxInside).toBe(1);
    });

    it('excludes across instances: read-modify-write split over two instances loses no update and never overlaps', async () => {
      const { locks, otherLocks } = await makeWithOther(true);
      const key = uniqueId('exclusion2');
      const probe = new OverlapProbe();
      let counter = 0;
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          (i % 2 ? otherLocks : locks).run(key, () =>
            probe.run(async () => {
              const read = counter;
              await sleep(2);
              counter = read + 1;
            }),
          ),
        ),
      );
      expect(counter).toBe(24);
      expect(probe.maxInside).toBe(1);
    });

    describe('several keys at once (a key set)', () => {
      it('opposite-order sets from two instances never deadlock, never overlap per key, and lose no update', async () => {
        const { provider, locks, otherLocks } = await makeWithOther(true, { waitTimeoutMs: 20_000 });
        const [a, b] = [uniqueId('set-a'), uniqueId('set-b')];
        const probes = { [a]: new OverlapProbe(), [b]: new OverlapProbe() };
        const balances = { [a]: 100, [b]: 100 };
        const started = performance.now();
        await Promise.all(
          Array.from({ length: 30 }, (_, i) => {
            const [from, to] = i % 2 ? [a, b] : [b, a];
            return (i % 4 < 2 ? locks : otherLocks).run([from, to], ([fromLock, toLock]) => {
              expect([fromLock.key, toLock.key]).toEqual([from, to]);
              return probes[from].run(() =>
                probes[to].run(async () => {
                  const [x, y] = [balances[from], balances[to]];
                  await sleep(1);
                  balances[from] = x - 1;
                  balances[to] = y + 1;
                }),
              );
            });
          }),
        );
        expect(balances[a] + balances[b]).toBe(200);
        expect([probes[a].maxInside, probes[b].maxInside]).toEqual([1, 1]);
        expect(performance.now() - started).toBeLessThan(15_000);
        await noLeftovers(provider);
      });

      describe.each(HOLDERS)('all or nothing, the other holder in %s', (_where, peer) => {
        /** `other` can take `key` at once: the set let go of it. */
        const freeFor = async (other: LockProvider, key: string) => {
          const lock = await other.tryAcquire(key);
          expect({ key, free: lock !== null }).toEqual({ key, free: true });
          await lock?.release();
        };

        it('reject mode: a busy key fails the call with LockBusyError, and the keys taken before it are free at once', async () => {
          const { provider, locks, other } = await makeWithOther(peer);
          const [a, b, c] = ['1', '2', '3'].map((n) => `${uniqueId('rej')}-${n}`);
          const held = await other.acquire(b);
          await expect(locks.run([c, b, a], () => 'ran', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
          await freeFor(other, a);
          await freeFor(other, c);
          await held.release();
          await noLeftovers(provider);
        });

        it('a timeout: one waitTimeoutMs for the whole set, and no key stays taken', async () => {
          const { provider, locks, other } = await makeWithOther(peer);
          const [a, b, c] = ['1', '2', '3'].map((n) => `${uniqueId('tmo')}-${n}`);
          const held = await other.acquire(c);
          const started = performance.now();
          const error = await locks.run([a, b, c], () => 'ran', { waitTimeoutMs: 300 }).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(LockTimeoutError);
          expect((error as LockTimeoutError).waitTimeoutMs).toBe(300);
          expect(performance.now() - started).toBeLessThan(2000);
          await freeFor(other, a);
          await freeFor(other, b);
          await held.release();
          await noLeftovers(provider);
        });

        it('an abort while waiting: the keys taken before it are let go before the call rejects', async () => {
          const { provider, locks, other } = await makeWithOther(peer);
          const [a, b] = ['1', '2'].map((n) => `${uniqueId('abt')}-${n}`);
          const held = await other.acquire(b);
          const controller = new AbortController();
          const call = locks.run([b, a], () => 'ran', { signal: controller.signal }).catch((e: unknown) => e);
          // Waiting for 'b' means it holds 'a' (taken first, in canonical order).
          await waitFor(async () => (await locks.inspect(b)).waitingHere === 1, 5000, 'the set to wait for its second key');
          const gone = new Error('client gone');
          controller.abort(gone);
          expect(await call).toBe(gone);
          await freeFor(other, a);
          await held.release();
          await noLeftovers(provider);
        });
      });
    });

    describe.each(HOLDERS)('the other holder in %s', (_where, peer) => {
      it('serves waiters first-come, first-served', async () => {
        const { locks, other } = await makeWithOther(peer);
        const key = uniqueId('fifo');
        const holder = await other.acquire(key);
        const order: number[] = [];
        const runs: Promise<void>[] = [];
        for (let i = 0; i < 8; i++) {
          runs.push(locks.run(key, () => void order.push(i)));
          await sleep(25); // arrival order is the order these reach the backend
        }
        await holder.release();
        await Promise.all(runs);
        expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      });

      it('times out a waiter with LockTimeoutError, which then never runs', async () => {
        const { provider, locks, other } = await makeWithOther(peer);
        const key = uniqueId('timeout');
        const holder = await other.acquire(key);
        let ran = false;
        const started = Date.now();
        await expect(locks.run(key, () => (ran = true), { waitTimeoutMs: 300 })).rejects.toBeInstanceOf(LockTimeoutError);
        const waited = Date.now() - started;
        expect(waited).toBeGreaterThanOrEqual(250);
        expect(waited).toBeLessThan(5000);
        await holder.release();
        await sleep(50);
        expect(ran).toBe(false);
        const next = await provider.tryAcquire(key);
        expect(next).not.toBeNull();
        await next!.release();
      });

      it('rejects at once in reject mode, and tryAcquire never jumps queued waiters', async () => {
        const { provider, locks, other } = await makeWithOther(peer);
        const key = uniqueId('reject');
        const holder = await other.acquire(key);
        await expect(locks.run(key, () => 'ran', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
        expect(await provider.tryAcquire(key)).toBeNull();

        const gate = deferred();
        const waiter = locks.run(key, async () => {
          await gate.promise;
          return 'waiter ran';
        });
        await sleep(50);
        await holder.release();
        // The key passes to the waiter, not to a newcomer calling tryAcquire (of either instance).
        const barging = await Promise.all([other.tryAcquire(key), provider.tryAcquire(key)]);
        await Promise.all(barging.map((lock) => lock?.release()));
        expect(barging.map((lock) => (lock ? 'barged in' : null))).toEqual([null, null]);
        gate.resolve();
        await expect(waiter).resolves.toBe('waiter ran');
      });

      it('bounds waiters per key with maxPending (the holder does not count)', async () => {
        const { provider, locks, other } = await makeWithOther(peer, { maxPending: 2 });
        const key = uniqueId('pending');
        const holder = await other.acquire(key);
        // All three at once: the third is one waiter too many, whichever instance holds the key.
        const runs = [1, 2, 3].map((i) => locks.run(key, () => i));
        await expect(runs[2]).rejects.toBeInstanceOf(LockBusyError);
        await expect(runs[2]).rejects.toMatchObject({ reason: 'max-pending' });
        await holder.release();
        await expect(Promise.all(runs.slice(0, 2))).resolves.toEqual([1, 2]);
        // A per-call bound overrides the provider's.
        const again = await other.acquire(key);
        const bounded = locks.run(key, () => 4, { maxPending: 0 });
        await expect(bounded).rejects.toBeInstanceOf(LockBusyError);
        await again.release();
        await noLeftovers(provider);
      });

      it('refuses the caller that comes once maxPending callers already wait behind another holder', async () => {
        // The Redis model found it (models/redis.pml, P7): a caller arriving after the first
        // waiter's place was known rode behind that place, a second waiter with maxPending 1.
        const { provider, locks, other } = await makeWithOther(peer, { maxPending: 1 });
        const key = uniqueId('pending-late');
        const holder = await other.acquire(key);
        const order: number[] = [];
        const first = locks.run(key, () => void order.push(1));
        await sleep(100); // the first waiter's acquisition has been answered (or is on its way: the same rule applies)
        const second = locks.run(key, () => void order.push(2));
        await expect(second).rejects.toMatchObject({ name: 'LockBusyError', reason: 'max-pending', maxPending: 1 });
        await holder.release();
        await first;
        expect(order).toEqual([1]);
        await noLeftovers(provider);
      });

      it('bounds waiters across keys with maxPendingTotal, and gives places back', async () => {
        const { provider, locks, other } = await makeWithOther(peer, { maxPendingTotal: 3, waitTimeoutMs: 60_000 });
        const keys = [uniqueId('total-a'), uniqueId('total-b')];
        const round = async () => {
          const holders = await Promise.all(keys.map((key) => other.acquire(key)));
          // Ten callers over two busy keys, each key far below its maxPending.
          const outcomes = Array.from({ length: 10 }, (_, i) =>
            locks.run(keys[i % 2], () => 'ran', { handler: 'Total#run' }).catch((error: unknown) => error),
          );
          // Those beyond the cap are refused at once, while the keys are still held.
          const refused = (await Promise.all(outcomes.slice(5))) as LockBusyError[];
          for (const error of refused) {
            expect(error).toBeInstanceOf(LockBusyError);
            expect(error).toMatchObject({ reason: 'max-pending-total', maxPendingTotal: 3 });
            expect(keys).toContain(error.key);
            expect(error.message).toContain(`Lock "${error.key}" is busy`);
            expect(error.message).toContain('3 callers');
            expect(error.message).toContain('maxPendingTotal');
            expect(error.message).toContain('Total#run');
          }
          await Promise.all(holders.map((holder) => holder.release()));
          const settled = await Promise.all(outcomes);
          const ran = settled.filter((outcome) => outcome === 'ran').length;
          // Three waiters; on PostgreSQL, with the holder in another instance, the
          // first caller of each key waits in the server (bounded by the lock pool),
          // not in this process, so it takes no place.
          expect(ran).toBeGreaterThanOrEqual(3);
          expect(ran).toBeLessThanOrEqual(3 + (peer ? keys.length : 0));
          expect(settled.filter((outcome) => outcome instanceof LockBusyError)).toHaveLength(10 - ran);
          return ran;
        };
        const first = await round();
        // Every place came back: the same again.
        expect(await round()).toBe(first);
        await noLeftovers(provider);
      });

      it('with maxPending 1, three callers at once: one waits, two are busy', async () => {
        const { provider, locks, other } = await makeWithOther(peer, { maxPending: 1 });
        const key = uniqueId('pending1');
        const holder = await other.acquire(key);
        const outcomes = [1, 2, 3].map((i) => locks.run(key, () => i).catch((error: unknown) => error));
        // Neither of the last two may wait: the first one already does.
        const [second, third] = await Promise.all(outcomes.slice(1));
        expect(second).toBeInstanceOf(LockBusyError);
        expect(third).toBeInstanceOf(LockBusyError);
        expect(second).toMatchObject({ reason: 'max-pending' });
        await holder.release();
        await expect(outcomes[0]).resolves.toBe(1);
        await noLeftovers(provider);
      });

      it('drops an aborted waiter at once; it never runs and does not hold up the queue', async () => {
        const { provider, locks, other } = await makeWithOther(peer);
        const key = uniqueId('abort');
        const holder = await other.acquire(key);
        const controller = new AbortController();
        let abortedRan = false;
        const aborted = locks.run(key, () => (abortedRan = true), { signal: controller.signal });
        await sleep(30);
        const after = locks.run(key, () => 'after ran');
        await sleep(30);
        const reason = new Error('client went away');
        const abortedAt = Date.now();
        controller.abort(reason);
        await expect(aborted).rejects.toBe(reason);
        expect(Date.now() - abortedAt).toBeLessThan(500);
        await holder.release();
        await expect(after).resolves.toBe('after ran');
        expect(abortedRan).toBe(false);
        const pre = new AbortController();
        pre.abort(reason);
        await expect(provider.acquire(key, { signal: pre.signal })).rejects.toBe(reason);
      });

      it('inspect lists the holder and counts the waiters, changes nothing, and lists nobody once the key is released', async () => {
        const { provider, locks, other, otherLocks } = await makeWithOther(peer);
        const key = uniqueId('inspect');
        expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
        const holder = await other.acquire(key);
        const order: number[] = [];
        const runs = [0, 1].map((i) => locks.run(key, () => void order.push(i)));
        await waitFor(async () => (await locks.inspect(key)).waitingHere === 2, 5000, 'two waiters here');
        const here = await locks.inspect(key);
        const there = await otherLocks.inspect(key);
        const token = { fencingToken: holder.fencingToken, here: true, heldForMs: expect.any(Number) };
        if (other === provider) {
          expect(here).toMatchObject({ key, holders: [token], waiting: 2, waitingHere: 2 });
        } else {
          // Seen from the waiters' instance: a holder elsewhere; from the holder's: its own lock, and the waiters elsewhere
          // (Redis counts each waiter with a place, PostgreSQL each waiting session: at least one of the two).
          expect(here).toMatchObject({ key, holders: [{ here: false }], waiting: 2, waitingHere: 2 });
          expect(there).toMatchObject({ key, holders: [token], waitingHere: 0 });
          expect(there.waiting).toBeGreaterThanOrEqual(1);
          expect(there.waiting).toBeLessThanOrEqual(2);
        }
        await holder.release();
        await Promise.all(runs);
        expect(order).toEqual([0, 1]);
        await waitFor(async () => (await locks.inspect(key)).holders.length === 0, 3000, 'nobody listed');
        expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
        expect(await otherLocks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
        // Inspecting left nothing behind and took nothing from anyone.
        await noLeftovers(provider);
        await noLeftovers(other);
      });

      it('hands out strictly increasing fencing tokens to successive holders', async () => {
        const { locks, otherLocks } = await makeWithOther(peer);
        const key = uniqueId('fencing');
        const tokens: bigint[] = [];
        await Promise.all(
          Array.from({ length: 16 }, (_, i) => (i % 2 ? otherLocks : locks).run(key, (lock) => void tokens.push(lock.fencingToken))),
        );
        expect(tokens).toHaveLength(16);
        for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
        expect(typeof tokens[0]).toBe('bigint');
      });

      it('keeps a lease alive while its holder runs longer than the lease', async () => {
        const leaseMs = subject.shortLeaseMs ?? 600;
        const { provider, other } = await makeWithOther(peer, { leaseMs });
        const key = uniqueId('lease');
        const lock = await provider.acquire(key);
        await sleep(3 * leaseMs); // three leases
        expect(await other.tryAcquire(key)).toBeNull();
        expect(lock.signal.aborted).toBe(false);
        expect(lock.lost).toBeUndefined();
        await lock.extend(2000);
        expect(await other.tryAcquire(key)).toBeNull();
        await lock.release();
        const next = await other.tryAcquire(key);
        expect(next).not.toBeNull();
        await next!.release();
      });

      it(
        subject.grantsNow
          ? 'LockService runs a section on a free key before run() returns, and never while someone holds or waits for the key'
          : 'LockService runs no section before run() returns (the key is asked of the backend first)',
        async () => {
          const { provider, other, locks } = await makeWithOther(peer);
          const key = uniqueId('now');
          const ranAtOnce = (options?: RunOptions): { ran: boolean; done: Promise<unknown> } => {
            let ran = false;
            const done = locks.run(key, () => void (ran = true), options).catch((error: unknown) => error);
            return { ran, done };
          };
          const held = await other.acquire(key);
          const waiting = provider.acquire(key, { waitTimeoutMs: 5000 });
          const behind = ranAtOnce({ waitTimeoutMs: 5000 });
          expect(behind.ran).toBe(false);
          await held.release();
          const next = await waiting;
          const behindHolder = ranAtOnce({ waitTimeoutMs: 5000 });
          expect(behindHolder.ran).toBe(false);
          await next.release();
          await Promise.all([behind.done, behindHolder.done]);
          // Bad input is left to the usual path and its errors: nothing runs.
          for (const bad of ['', '\ud800']) {
            let ran = false;
            await expect(locks.run(bad, () => void (ran = true))).rejects.toThrow();
            expect(ran).toBe(false);
          }
          const free = ranAtOnce();
          expect(free.ran).toBe(subject.grantsNow);
          await free.done;
          // run() settles with the section's result, not with its release's reply: the key is free once that reply lands.
          let after: Lock | null = null;
          await waitFor(async () => (after = await other.tryAcquire(key)) !== null, 3000, 'the key free after run()');
          await after!.release();
        },
      );

      it('releases idempotently and never releases a lock someone else now holds', async () => {
        const { provider, other } = await makeWithOther(peer);
        const key = uniqueId('release');
        const a = await provider.acquire(key);
        await a.release();
        await a.release();
        const b = await other.acquire(key, { waitTimeoutMs: 1000 });
        await a.release();
        expect(await provider.tryAcquire(key)).toBeNull();
        expect(await other.tryAcquire(key)).toBeNull();
        await expect(a.extend()).rejects.toBeInstanceOf(LockLostError);
        await b.release();
        const c = await provider.tryAcquire(key);
        expect(c).not.toBeNull();
        await c!.release();
      });
    });

    it('a call made after run() resolved finds the key free in this process (reject mode, tryAcquire), though the release may still be on its way', async () => {
      const { provider, locks } = await make();
      const key = uniqueId('after-run');
      const order: number[] = [];
      for (let i = 0; i < 20; i++) await locks.run(key, () => void order.push(i), { mode: 'reject' });
      expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
      await locks.run(key, () => undefined);
      const next = await provider.tryAcquire(key);
      expect(next).not.toBeNull();
      await next!.release();
    });

    it("LockService validates a call once: through it, the provider's validating entry points are never called", async () => {
      const { provider, locks } = await make();
      const key = uniqueId('validated');
      const validating = [jest.spyOn(provider, 'acquire'), jest.spyOn(provider, 'tryAcquire')];
      const holder = await provider.tryAcquire(key);
      expect(holder).not.toBeNull();
      const waiting = locks.run(key, () => 'waited', { waitTimeoutMs: 5000 });
      const refused = locks.run(key, () => 'ran', { mode: 'reject' }).catch((error: Error) => error.name);
      await holder!.release();
      expect(await Promise.all([waiting, refused, locks.run(key, () => 'free')])).toEqual(['waited', 'LockBusyError', 'free']);
      // The holder above was the only direct call.
      expect(validating.map((spy) => spy.mock.calls.length)).toEqual([0, 1]);
    });

    it('with maxPending 1, three callers at once on a free key: one holds, one waits, one is busy', async () => {
      const { provider, locks } = await make({ maxPending: 1 });
      const key = uniqueId('free3');
      const gate = deferred();
      const order: number[] = [];
      const outcomes = [1, 2, 3].map((i) =>
        locks
          .run(key, async () => {
            order.push(i);
            if (i === 1) await gate.promise;
            return i;
          })
          .catch((error: unknown) => error),
      );
      // The caller becoming the holder is not a waiter: only the third is one too many.
      const third = await outcomes[2];
      expect(third).toBeInstanceOf(LockBusyError);
      expect(third).toMatchObject({ reason: 'max-pending' });
      gate.resolve();
      await expect(Promise.all(outcomes.slice(0, 2))).resolves.toEqual([1, 2]);
      expect(order).toEqual([1, 2]);
      await noLeftovers(provider);
    });

    it('with maxPending 1000, 1002 callers at once on a free key: 1001 run, 1 is busy', async () => {
      const { provider, locks } = await make({ maxPending: 1000, waitTimeoutMs: 60_000 });
      const key = uniqueId('free1002');
      const gate = deferred();
      let ran = 0;
      const outcomes = Array.from({ length: 1002 }, (_, i) =>
        locks
          .run(key, async () => {
            ran++;
            if (i === 0) await gate.promise;
          })
          .then(
            () => 'ran',
            (error: unknown) => error,
          ),
      );
      await expect(outcomes[1001]).resolves.toBeInstanceOf(LockBusyError);
      gate.resolve();
      const settled = await Promise.all(outcomes);
      const busy = settled.filter((outcome) => outcome instanceof LockBusyError);
      expect(busy).toHaveLength(1);
      expect(busy[0]).toMatchObject({ reason: 'max-pending' });
      expect(settled.filter((outcome) => outcome === 'ran')).toHaveLength(1001);
      expect(ran).toBe(1001);
      await noLeftovers(provider);
    }, 90_000);

    it('with maxPendingTotal reached, a caller of a free key still takes it (it is no waiter)', async () => {
      const { provider, locks } = await make({ maxPendingTotal: 2, waitTimeoutMs: 60_000 });
      const busyKey = uniqueId('total-held');
      const holder = await provider.acquire(busyKey);
      const waiting = [1, 2].map((i) => locks.run(busyKey, () => i));
      const refused = locks.run(busyKey, () => 3, { handler: 'Total#held' });
      await expect(refused).rejects.toMatchObject({ name: 'LockBusyError', reason: 'max-pending-total' });
      await expect(refused).rejects.toThrow(
        `Lock "${busyKey}" is busy: 2 callers already wait for locks of this provider in this process (maxPendingTotal) (in Total#held)`,
      );
      await expect(locks.run(uniqueId('total-free'), () => 'free')).resolves.toBe('free');
      await holder.release();
      await expect(Promise.all(waiting)).resolves.toEqual([1, 2]);
      await noLeftovers(provider);
    });

    it('is reentrant: a holder asking for its own key again runs at once', async () => {
      const { provider, locks } = await make();
      const key = uniqueId('reentrant');
      const result = await locks.run(key, async (outer) =>
        locks.run(
          key,
          async (inner) => {
            expect(inner).toBe(outer);
            expect(locks.isHeld(key)).toBe(true);
            return 'inner ran';
          },
          { waitTimeoutMs: 200 },
        ),
      );
      expect(result).toBe('inner ran');
      expect(locks.isHeld(key)).toBe(false);
      // Once released, the key is not "held" by a late continuation of that context.
      let late: Promise<string> | undefined;
      const goOn = deferred();
      await locks.run(key, () => {
        late = goOn.promise.then(() => locks.run(key, () => 'late ran'));
      });
      const blocker = await provider.acquire(key);
      goOn.resolve();
      await expect(Promise.race([late, sleep(200).then(() => 'still waiting')])).resolves.toBe('still waiting');
      await blocker.release();
      await expect(late).resolves.toBe('late ran');
    });

    it('rejects bad per-call options and keys with an error naming them, and changes nothing', async () => {
      const { provider } = await make();
      const key = uniqueId('badopts');
      const bad: Array<[string, () => Promise<unknown>, RegExp]> = [
        ['acquire waitTimeoutMs 1.5', () => provider.acquire(key, { waitTimeoutMs: 1.5 }), /waitTimeoutMs=1\.5.*acquire/],
        ['acquire leaseMs NaN', () => provider.acquire(key, { leaseMs: Number.NaN }), /leaseMs=NaN/],
        ['acquire waitTimeoutMs -1', () => provider.acquire(key, { waitTimeoutMs: -1 }), /waitTimeoutMs=-1/],
        ['tryAcquire leaseMs -5', () => provider.tryAcquire(key, { leaseMs: -5 }), /leaseMs=-5.*tryAcquire/],
        ['acquire empty key', () => provider.acquire(''), /key/i],
        ['acquire lone surrogate key', () => provider.acquire('a\ud800'), /key/i],
      ];
      for (const [what, call, message] of bad) {
        let result: Promise<unknown>;
        try {
          result = call();
        } catch (error) {
          throw new Error(`${what}: threw synchronously (${(error as Error).message}); it must reject`, { cause: error });
        }
        const error = await result.then(
          (lock) => new Error(`${what}: resolved with ${String(lock)}`),
          (e: Error) => e,
        );
        expect([what, error.message]).toEqual([what, expect.stringMatching(message)]);
        expect(error.name).not.toBe('Error');
      }
      // Nothing was taken: the key is free for someone else, and nothing is left behind.
      const other = await subject.createPeer(provider);
      open.add(other);
      const lock = await other.tryAcquire(key);
      expect(lock).toBeTruthy();
      await lock!.release();
      await noLeftovers(provider);
    });

    it('leaves nothing behind for idle keys', async () => {
      const { provider, locks } = await make();
      const keys = Array.from({ length: 5 }, (_, i) => uniqueId(`idle${i}`));
      const holders: Lock[] = await Promise.all(keys.map((k) => provider.acquire(k)));
      const waiters = keys.map((k) => locks.run(k, () => sleep(5)));
      const timedOut = locks.run(keys[0], () => undefined, { waitTimeoutMs: 100 }).catch((e) => e);
      const controller = new AbortController();
      const aborted = locks.run(keys[1], () => undefined, { signal: controller.signal }).catch((e) => e);
      await sleep(30);
      controller.abort(new Error('gone'));
      expect(await timedOut).toBeInstanceOf(LockTimeoutError);
      await aborted;
      await Promise.all(holders.map((h) => h.release()));
      await Promise.all(waiters);
      await noLeftovers(provider);
    });

    it('shuts down: waiters and newcomers get LockBackendError, holders finish first', async () => {
      const { provider, locks } = await make({ shutdownGraceMs: 5000 });
      const key = uniqueId('shutdown');
      const gate = deferred();
      let holderFinished = false;
      const inside = deferred();
      const holder = locks.run(key, async () => {
        inside.resolve();
        await gate.promise;
        holderFinished = true;
      });
      // A backend's first acquisition may still be connecting after a few milliseconds.
      await inside.promise;
      const waiter = locks.run(key, () => 'waiter ran');
      await sleep(30);
      const closing = provider.close();
      await expect(waiter).rejects.toBeInstanceOf(LockBackendError);
      await expect(locks.run(uniqueId('late'), () => 'late ran')).rejects.toBeInstanceOf(LockBackendError);
      let closed = false;
      void closing.then(() => (closed = true));
      await sleep(100);
      expect(closed).toBe(false);
      gate.resolve();
      await holder;
      await closing;
      expect(holderFinished).toBe(true);
    });

    it('shuts down once, draining before it closes, whichever of the hooks or close() comes first and however often', async () => {
      const { provider, locks } = await make({ shutdownGraceMs: 5000 });
      const lock = await provider.acquire(uniqueId('close-once'));
      const settled: string[] = [];
      const hooks = provider as unknown as Record<'onApplicationShutdown' | 'beforeApplicationShutdown', () => unknown>;
      // Nest's second hook first (a host that calls only that one), then the others, twice over.
      const calls = [
        ['on', hooks.onApplicationShutdown()],
        ['close', provider.close()],
        ['before', hooks.beforeApplicationShutdown()],
        ['on again', hooks.onApplicationShutdown()],
      ] as const;
      for (const [name, call] of calls) void Promise.resolve(call).then(() => settled.push(name));
      await sleep(100);
      // The holder still holds: nothing closed under it.
      expect(settled).toEqual([]);
      await expect(locks.run(uniqueId('late'), () => 'late ran')).rejects.toBeInstanceOf(LockBackendError);
      await lock.release();
      await Promise.all(calls.map(([, call]) => call));
      expect([...settled].sort()).toEqual(['before', 'close', 'on', 'on again']);
      await provider.close();
    });

    it(
      subject.watchesHeldLocks
        ? 'aborts the signal of a lock still held when the shutdown grace ends (renewal/watch stops then)'
        : 'keeps a lock held past the shutdown grace (nothing renews or watches an in-memory lock, so nothing stops)',
      async () => {
        const graceMs = 200;
        const { provider } = await make({ shutdownGraceMs: graceMs, leaseMs: 3000 });
        const key = uniqueId('grace');
        const lock = await provider.acquire(key);
        // Nobody reads this one's signal before the loss: the loss must still be reported.
        const unwatched = await provider.acquire(uniqueId('grace-unwatched'));
        let abortedAfter: number | undefined;
        const closeStarted = performance.now();
        lock.signal.addEventListener('abort', () => (abortedAfter = performance.now() - closeStarted));
        await provider.close();
        if (subject.watchesHeldLocks) {
          expect(lock.signal.aborted).toBe(true);
          expect(lock.signal.reason).toBeInstanceOf(LockLostError);
          expect((lock.signal.reason as Error).message).toContain(key);
          // Not before the holder had its whole grace period.
          expect(abortedAfter).toBeGreaterThanOrEqual(graceMs - 5);
          await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
          expect(lock.lost).toBe(lock.signal.reason);
          expect(unwatched.lost).toBeInstanceOf(LockLostError);
          expect(unwatched.signal.aborted).toBe(true);
          expect(unwatched.signal.reason).toBe(unwatched.lost);
        } else {
          expect(lock.signal.aborted).toBe(false);
          expect([lock.lost, unwatched.lost, unwatched.signal.aborted]).toEqual([undefined, undefined, false]);
        }
        await lock.release().catch(() => undefined);
        await unwatched.release().catch(() => undefined);
      },
    );
  });
  // The run contract transaction mode shares (run.contract.ts): the same words through LockService, another instance holding.
  describeRunContract({
    name: subject.name,
    open: async () => {
      const provider = await subject.create();
      const peer = await subject.createPeer(provider);
      const locks = new LockService(provider);
      return {
        locks,
        other: peer === provider ? locks : new LockService(peer),
        close: async () => {
          await Promise.all([...new Set([provider, peer])].map((p) => p.close()));
        },
      };
    },
  });
}
