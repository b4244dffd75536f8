import { LockBusyError, LockService, LockTimeoutError, type RunOptions } from 'nestjs-serialized';
import { deferred, OverlapProbe, sleep, uniqueId, waitFor } from '../support/timing';

/** Two instances of one app sharing a backend and a key namespace, as `LockService`s. */
export interface RunInstances {
  readonly locks: LockService;
  /** "Someone else": another instance (its own connections); the in-memory driver's is `locks` itself. */
  readonly other: LockService;
  close(): Promise<void>;
}

/** What each way of running a section plugs into the run contract. */
export interface RunContractSubject {
  readonly name: string;
  open(): Promise<RunInstances>;
  /** Options every call carries: `{ transaction: true }` in transaction mode, none for a driver. */
  readonly options?: RunOptions;
}

/**
 * The behaviour of `LockService.run` that every way of running a section shares
 * (docs/semantics.md, "Guarantees"): every driver (from lock-provider.contract.ts)
 * and transaction mode (transaction.contract.spec.ts), where the provider contract
 * cannot apply — a transaction lock has no `acquire` to hold it outside a section.
 * The other holder of each check is another instance.
 */
export function describeRunContract(subject: RunContractSubject): void {
  describe(`run contract: ${subject.name}`, () => {
    const opened: RunInstances[] = [];
    const open = async (): Promise<RunInstances> => {
      const instances = await subject.open();
      opened.push(instances);
      return instances;
    };
    const run = <T>(service: LockService, key: string, fn: () => T | Promise<T>, options: RunOptions = {}): Promise<T> =>
      service.run(key, fn, { ...subject.options, ...options });
    /** The other instance holds `key` until the returned function is called (resolves once it holds it). */
    const holdIn = async (service: LockService, key: string): Promise<{ release: () => Promise<void> }> => {
      const inside = deferred();
      const gate = deferred();
      const section = run(service, key, async () => {
        inside.resolve();
        await gate.promise;
      });
      await inside.promise;
      return {
        release: async () => {
          gate.resolve();
          await section;
        },
      };
    };
    /** Whether `key` is free for `service` now: a reject-mode call runs. */
    const isFree = (service: LockService, key: string): Promise<boolean> =>
      run(service, key, () => true, { mode: 'reject' }).catch((error: unknown) => {
        if (error instanceof LockBusyError) return false;
        throw error;
      });

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((instances) => instances.close()));
    });

    it('excludes across instances: read-modify-write split over two instances loses no update and never overlaps', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-exclusion');
      const probe = new OverlapProbe();
      let counter = 0;
      await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          run(i % 2 ? other : locks, key, () =>
            probe.run(async () => {
              const read = counter;
              await sleep(2);
              counter = read + 1;
            }),
          ),
        ),
      );
      expect({ counter, maxInside: probe.maxInside }).toEqual({ counter: 16, maxInside: 1 });
    });

    it('serves waiters first-come, first-served while another instance holds the key', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-fifo');
      const holder = await holdIn(other, key);
      const order: number[] = [];
      const runs: Promise<void>[] = [];
      for (let i = 0; i < 6; i++) {
        runs.push(run(locks, key, () => void order.push(i)));
        await sleep(25);
      }
      await holder.release();
      await Promise.all(runs);
      expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    });

    it('times out a waiter with LockTimeoutError, which never runs, and leaves the key free', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-timeout');
      const holder = await holdIn(other, key);
      let ran = false;
      const started = Date.now();
      const error = await run(locks, key, () => (ran = true), { waitTimeoutMs: 300 }).catch((e: unknown) => e);
      const waited = Date.now() - started;
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(5000);
      await holder.release();
      expect(ran).toBe(false);
      await waitFor(() => isFree(locks, key), 3000, 'the key to be free');
    });

    it('rejects at once in reject mode with LockBusyError, and runs once the key is free', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-reject');
      const holder = await holdIn(other, key);
      let ran = false;
      await expect(run(locks, key, () => (ran = true), { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
      expect(ran).toBe(false);
      await holder.release();
      await waitFor(() => isFree(locks, key), 3000, 'the key to be free');
    });

    it('bounds waiters with maxPending while another instance holds the key: the newest caller is refused', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-pending');
      const holder = await holdIn(other, key);
      const ran: number[] = [];
      // Two may wait, the first of them at the backend (in transaction mode, inside the server).
      const calls = [0, 1, 2].map((i) =>
        run(locks, key, () => void ran.push(i), { maxPending: 2 }).then(
          () => 'ran',
          (error: unknown) => (error instanceof LockBusyError ? `busy:${error.reason}` : `error:${String(error)}`),
        ),
      );
      // The refusal comes while the key is still held: nobody had to give up for it.
      await sleep(300);
      await holder.release();
      expect(await Promise.all(calls)).toEqual(['ran', 'ran', 'busy:max-pending']);
      expect(ran).toEqual([0, 1]);
    });

    it('drops aborted waiters at once, the first in line among them: each rejects with its reason, never runs, and holds nobody up', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-abort');
      const holder = await holdIn(other, key);
      const order: string[] = [];
      // The first waits for the other instance at the backend (in transaction mode, inside the server); the second in line here.
      const [first, second] = [new AbortController(), new AbortController()];
      const calls = [first, second].map((controller, i) =>
        run(locks, key, () => void order.push(`aborted ${i}`), { signal: controller.signal }).catch((e: unknown) => e),
      );
      const behind = run(locks, key, () => void order.push('behind'));
      await sleep(100);
      const reasons = [new Error('client 0 gone'), new Error('client 1 gone')];
      first.abort(reasons[0]);
      second.abort(reasons[1]);
      // Both leave while the other instance still holds the key.
      expect(await Promise.all(calls)).toEqual(reasons);
      await holder.release();
      await behind;
      expect(order).toEqual(['behind']);
    });

    it('gives successive holders across instances strictly increasing fencing tokens', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-fence');
      const tokens: bigint[] = [];
      for (let i = 0; i < 6; i++) {
        await (i % 2 ? other : locks).run(key, (lock) => void tokens.push(lock.fencingToken), { ...subject.options });
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
    });

    it("passes the section's own error through unchanged and frees the key", async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-error');
      const failure = new Error('the section failed');
      await expect(run(locks, key, () => Promise.reject(failure))).rejects.toBe(failure);
      await waitFor(() => isFree(other, key), 3000, 'the key to be free for the other instance');
    });

    it('rejects a bad key or option with an error naming it, and runs nothing', async () => {
      const { locks, other } = await open();
      const key = uniqueId('run-bad');
      let ran = 0;
      const bad: Array<[string, () => Promise<unknown>, RegExp]> = [
        ['empty key', () => run(locks, '', () => ran++), /key/i],
        ['waitTimeoutMs 1.5', () => run(locks, key, () => ran++, { waitTimeoutMs: 1.5 }), /waitTimeoutMs=1\.5/],
        ['maxPending -1', () => run(locks, key, () => ran++, { maxPending: -1 }), /maxPending=-1/],
      ];
      for (const [what, call, message] of bad) {
        const error = await call().then(
          () => new Error(`${what}: resolved`),
          (e: Error) => e,
        );
        expect([what, error.message]).toEqual([what, expect.stringMatching(message)]);
        expect([what, error.name]).not.toEqual([what, 'Error']);
      }
      expect(ran).toBe(0);
      expect(await isFree(other, key)).toBe(true);
    });
  });
}
