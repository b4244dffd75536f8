/**
 * A holder whose event loop stalls past its lease inside its section (a long
 * synchronous task): it takes KEY, tells the test, spins for STALL_MS without
 * yielding, then reports what it can see of its lock at once — before any timer of
 * its own has had a turn — and releases. VIA: `service` (LockService.run, which
 * reads `lock.lost` before it lets go) or `provider` (acquire, stall, `release()`
 * without looking: the release itself must find the loss). Every warning the
 * library logs is sent back. Env: REDIS_URL, KEY_PREFIX, KEY, LEASE_MS, STALL_MS, VIA.
 */
import { Logger, type LoggerService } from '@nestjs/common';
import { LockService, RedisLockProvider, type Lock } from 'nestjs-serialized';

const warnings: string[] = [];
const capture: LoggerService = {
  log: () => undefined,
  error: (message: unknown) => void warnings.push(`error: ${String(message)}`),
  warn: (message: unknown) => void warnings.push(String(message)),
  debug: () => undefined,
  verbose: () => undefined,
};
Logger.overrideLogger(capture);

const env = (name: string): string =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is required`);
  })();

async function main(): Promise<void> {
  const provider = new RedisLockProvider({ url: env('REDIS_URL'), keyPrefix: env('KEY_PREFIX'), leaseMs: Number(env('LEASE_MS')) });
  const stallMs = Number(env('STALL_MS'));
  const seen: Record<string, unknown> = {};
  const stall = (lock: Lock) => {
    process.send!({ type: 'holding', token: lock.fencingToken.toString() });
    const until = Date.now() + stallMs;
    while (Date.now() < until) {
      // the event loop does not run
    }
  };
  const ipcFlushed = () => new Promise((resolve) => setImmediate(resolve));
  if (env('VIA') === 'service') {
    const locks = new LockService(provider);
    await locks.run(env('KEY'), async (lock) => {
      await ipcFlushed();
      stall(lock);
      // Synchronously after the stall: no timer has run yet.
      seen.lostAfterStall = lock.lost !== undefined;
      seen.abortedAfterStall = lock.signal.aborted;
    });
    seen.runResolved = true;
  } else {
    const lock = await provider.acquire(env('KEY'));
    await ipcFlushed();
    stall(lock);
    await lock.release();
    seen.releaseResolved = true;
    seen.lostAfterRelease = lock.lost !== undefined;
    seen.abortedAfterRelease = lock.signal.aborted;
    seen.reason = (lock.signal.reason as Error | undefined)?.name;
  }
  process.send!({ type: 'done', seen, warnings });
  await provider.close();
  process.disconnect();
}

main().catch((error: unknown) => {
  process.send?.({ type: 'failed', message: String((error as Error)?.stack ?? error) });
  process.exit(1);
});
