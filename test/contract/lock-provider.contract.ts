import { LockBackendError, LockBusyError, LockLostError, LockService, LockTimeoutError, type Lock, type LockProvider } from 'nestjs-serialized';
import { deferred, OverlapProbe, sleep, uniqueId, waitFor } from '../support/timing';

/** A provider under test; `close()` shuts it down as `app.close()` would. */
export type ClosableLockProvider = LockProvider & { close(): Promise<void> };

export interface ProviderOptionsForTest {
  leaseMs?: number;
  waitTimeoutMs?: number;
  maxPending?: number;
  shutdownGraceMs?: number;
}

/** What each backend plugs into the shared contract suite. */
export interface ContractSubject {
  readonly name: string;
  /** A fresh provider with its own key namespace, so tests never see each other's keys. */
  create(options?: ProviderOptionsForTest): Promise<ClosableLockProvider>;
  /**
   * What the backend still holds for this provider's namespace once every lock was
   * released and every waiter left: lock keys, queue entries, sessions holding
   * advisory locks, map entries, timers. Must be 0.
   */
  leftovers(provider: ClosableLockProvider): Promise<number>;
  /** Optional clean-up after the whole suite (close shared clients). */
  afterAll?(): Promise<void>;
}

/**
 * The behaviour every provider must share (DESIGN.md, "Semantics"). Written once,
 * run against the in-memory, Redis and PostgreSQL providers, so they cannot drift.
 */
export function describeLockProviderContract(subject: ContractSubject): void {
  describe(`LockProvider contract: ${subject.name}`, () => {
    const open: ClosableLockProvider[] = [];
    const make = async (options?: ProviderOptionsForTest) => {
      const provider = await subject.create(options);
      open.push(provider);
      return { provider, locks: new LockService(provider) };
    };

    afterEach(async () => {
      await Promise.all(open.splice(0).map((p) => p.close()));
    });
    afterAll(async () => {
      await subject.afterAll?.();
    });

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

    it('serves waiters first-come, first-served', async () => {
      const { provider, locks } = await make();
      const key = uniqueId('fifo');
      const holder = await provider.acquire(key);
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
      const { provider, locks } = await make();
      const key = uniqueId('timeout');
      const holder = await provider.acquire(key);
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
      const { provider, locks } = await make();
      const key = uniqueId('reject');
      const holder = await provider.acquire(key);
      await expect(locks.run(key, () => 'ran', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
      expect(await provider.tryAcquire(key)).toBeNull();

      const waiter = locks.run(key, () => 'waiter ran');
      await sleep(50);
      await holder.release();
      // The key passes to the waiter, not to a newcomer calling tryAcquire.
      const barging = await provider.tryAcquire(key);
      if (barging) await barging.release();
      expect(barging).toBeNull();
      await expect(waiter).resolves.toBe('waiter ran');
    });

    it('bounds waiters per key with maxPending (the holder does not count)', async () => {
      const { provider, locks } = await make({ maxPending: 2 });
      const key = uniqueId('pending');
      const holder = await provider.acquire(key);
      const first = locks.run(key, () => 1);
      const second = locks.run(key, () => 2);
      await sleep(50);
      const third = locks.run(key, () => 3);
      await expect(third).rejects.toBeInstanceOf(LockBusyError);
      await expect(third).rejects.toMatchObject({ reason: 'max-pending' });
      await holder.release();
      await expect(Promise.all([first, second])).resolves.toEqual([1, 2]);
      // A per-call bound overrides the provider's.
      const again = await provider.acquire(key);
      const bounded = locks.run(key, () => 4, { maxPending: 0 });
      await expect(bounded).rejects.toBeInstanceOf(LockBusyError);
      await again.release();
    });

    it('is reentrant: a holder asking for its own key again runs at once', async () => {
      const { locks } = await make();
      const key = uniqueId('reentrant');
      const result = await locks.run(key, async (outer) =>
        locks.run(key, async (inner) => {
          expect(inner).toBe(outer);
          expect(locks.isHeld(key)).toBe(true);
          return 'inner ran';
        }, { waitTimeoutMs: 200 }),
      );
      expect(result).toBe('inner ran');
      expect(locks.isHeld(key)).toBe(false);
      // Once released, the key is not "held" by a late continuation of that context.
      let late: Promise<string> | undefined;
      await locks.run(key, () => {
        late = sleep(30).then(() => locks.run(key, () => 'late ran'));
      });
      const blocker = await locks.provider.acquire(key);
      await expect(Promise.race([late, sleep(200).then(() => 'still waiting')])).resolves.toBe('still waiting');
      await blocker.release();
      await expect(late).resolves.toBe('late ran');
    });

    it('hands out strictly increasing fencing tokens to successive holders', async () => {
      const { locks } = await make();
      const key = uniqueId('fencing');
      const tokens: bigint[] = [];
      await Promise.all(Array.from({ length: 15 }, () => locks.run(key, (lock) => void tokens.push(lock.fencingToken))));
      expect(tokens).toHaveLength(15);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
      expect(typeof tokens[0]).toBe('bigint');
    });

    it('drops an aborted waiter at once; it never runs and does not hold up the queue', async () => {
      const { provider, locks } = await make();
      const key = uniqueId('abort');
      const holder = await provider.acquire(key);
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

    it('keeps a lease alive while its holder runs longer than the lease', async () => {
      const { provider } = await make({ leaseMs: 300 });
      const key = uniqueId('lease');
      const lock = await provider.acquire(key);
      await sleep(1000);
      expect(await provider.tryAcquire(key)).toBeNull();
      expect(lock.signal.aborted).toBe(false);
      await lock.extend(2000);
      expect(await provider.tryAcquire(key)).toBeNull();
      await lock.release();
      const next = await provider.tryAcquire(key);
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('releases idempotently and never releases a lock someone else now holds', async () => {
      const { provider } = await make();
      const key = uniqueId('release');
      const a = await provider.acquire(key);
      await a.release();
      await a.release();
      const b = await provider.acquire(key, { waitTimeoutMs: 1000 });
      await a.release();
      expect(await provider.tryAcquire(key)).toBeNull();
      await expect(a.extend()).rejects.toBeInstanceOf(LockLostError);
      await b.release();
      const c = await provider.tryAcquire(key);
      expect(c).not.toBeNull();
      await c!.release();
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
      await waitFor(async () => (await subject.leftovers(provider)) === 0, 3000, 'no leftovers').catch(() => undefined);
      expect(await subject.leftovers(provider)).toBe(0);
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
  });
}
