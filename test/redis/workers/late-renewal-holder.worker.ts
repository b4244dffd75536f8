/**
 * A holder that resumes past its lease while a renewal of its lease is due, in the
 * order in which a real section meets a stall: after it, the overdue timers run in
 * the order they fell due — the lease's renewal (due a third of the lease after the
 * grant) first, then the timer the section awaits (due one lease after the grant) —
 * and the section goes on from there with its next statement: a read of `lock.lost`.
 *
 * It takes KEY (lease LEASE_MS), tells the test, and awaits a timer of one lease.
 * HOW says how the process is held up meanwhile, always from setImmediate, so that
 * the turn after it begins with the timers that fell due during it (a hold-up inside
 * a timer callback would leave them to a later turn, as Node runs only the timers
 * due when the timers phase began; one in the poll phase would let I/O that came
 * meanwhile run first):
 *   - `blocked`: its event loop is blocked for STALL_MS;
 *   - `stopped`: the section computes until the test has SIGSTOPped the process (for
 *     longer than the lease) and SIGCONTed it: it sees the gap in its own clock.
 * What the section saw on resuming, and when, go back to the test.
 * Env: REDIS_URL, KEY_PREFIX, KEY, LEASE_MS, STALL_MS (blocked), HOW.
 */
import { LockService, RedisLockProvider } from 'nestjs-serialized';

const env = (name: string): string =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is required`);
  })();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function block(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // the event loop does not run
  }
}

/**
 * Computes until a gap longer than `gapMs` shows the process was stopped, or for
 * `atMostMs` (a stop that came before the computing began is seen by the test's clock).
 */
function spinUntilStopped(gapMs: number, atMostMs: number): void {
  const giveUpAt = Date.now() + atMostMs;
  let last = Date.now();
  for (let now = last; now < giveUpAt; now = Date.now()) {
    if (now - last > gapMs) return;
    last = now;
  }
}

async function main(): Promise<void> {
  const leaseMs = Number(env('LEASE_MS'));
  const provider = new RedisLockProvider({ url: env('REDIS_URL'), keyPrefix: env('KEY_PREFIX'), leaseMs });
  const locks = new LockService(provider);
  const seen: Record<string, unknown> = {};
  await locks.run(env('KEY'), async (lock) => {
    // Sent before the hold-up begins (the IPC write completes on the event loop).
    await new Promise((sent) => process.send!({ type: 'holding', token: lock.fencingToken.toString() }, undefined, {}, sent));
    // From setImmediate: the turn after it begins with the timers that fell due meanwhile.
    setImmediate(() => (env('HOW') === 'blocked' ? block(Number(env('STALL_MS'))) : spinUntilStopped(leaseMs / 2, leaseMs * 4)));
    await sleep(leaseMs);
    // The section's first statement on resuming: is the lock still ours?
    seen.lostAtFirstRead = lock.lost !== undefined;
    seen.abortedAtFirstRead = lock.signal.aborted;
    seen.resumedAt = Date.now();
  });
  process.send!({ type: 'done', seen });
  await provider.close();
  process.disconnect();
}

main().catch((error: unknown) => {
  process.send?.({ type: 'failed', message: String((error as Error)?.stack ?? error) });
  process.exit(1);
});
