/**
 * One app instance's PostgresLockProvider in a process of its own, driven by the
 * test over IPC: the holder (its lock sessions may go through the test's TCP proxy)
 * or the contender (straight to PostgreSQL). Every report carries `at` (Date.now()),
 * so the test can order events across processes.
 * Env: DATABASE_URL, KEY_PREFIX, APP_NAME (application_name of its lock sessions), KEY.
 *
 * Commands:
 * - {type:'hold'}: acquires KEY, reports `held` (fencing token); if lock.signal ever
 *   aborts, reports `aborted` (reason name and message).
 * - {type:'extend'}: extends the held lock, reports `extended` (whether its signal aborted).
 * - {type:'release'}: releases it, reports `released`.
 * - {type:'contend'}: asks for KEY over and over, each ask waiting 250 ms in PostgreSQL's
 *   queue; reports `tried` after each ask that timed out and `entered` (token) for each
 *   one that got the key (released at once), until {type:'stop'}, which reports `stopped`.
 * - {type:'take', waitTimeoutMs}: waits for KEY, reports `took` (token), releases.
 * Any unexpected error is reported as `failed`.
 */
import type { Lock } from 'nestjs-serialized';
// Deep imports: a worker that loads only what it uses starts in half the time.
import { LockTimeoutError } from 'nestjs-serialized/errors';
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';

type Command = { type: string; [field: string]: unknown };

const send = (message: Command): void => {
  process.send?.({ ...message, at: Date.now() });
};
const fail = (error: unknown): void =>
  send({ type: 'failed', name: (error as Error)?.name, message: String((error as Error)?.stack ?? error) });

const key = process.env.KEY!;
const provider = new PostgresLockProvider({
  connectionString: process.env.DATABASE_URL,
  keyPrefix: process.env.KEY_PREFIX,
  applicationName: process.env.APP_NAME,
  lockPoolSize: 2,
});
let held: Lock | undefined;
let contending: Promise<void> | undefined;
let stopContending = false;

async function hold(): Promise<void> {
  const lock = await provider.acquire(key);
  held = lock;
  lock.signal.addEventListener('abort', () => {
    const reason = lock.signal.reason as Error;
    send({ type: 'aborted', name: reason?.name, message: reason?.message });
  });
  send({ type: 'held', token: lock.fencingToken.toString() });
}

async function contend(): Promise<void> {
  let tries = 0;
  let entries = 0;
  while (!stopContending) {
    try {
      const lock = await provider.acquire(key, { waitTimeoutMs: 250 });
      entries++;
      send({ type: 'entered', token: lock.fencingToken.toString(), entries });
      await lock.release();
    } catch (error) {
      if (!(error instanceof LockTimeoutError)) throw error;
      send({ type: 'tried', tries: ++tries });
    }
  }
  send({ type: 'stopped', tries, entries });
}

async function take(waitTimeoutMs: number): Promise<void> {
  const lock = await provider.acquire(key, { waitTimeoutMs });
  send({ type: 'took', token: lock.fencingToken.toString() });
  await lock.release();
}

process.on('message', (command: Command) => {
  switch (command.type) {
    case 'hold':
      hold().catch(fail);
      break;
    case 'extend':
      held!.extend().then(() => send({ type: 'extended', aborted: held!.signal.aborted }), fail);
      break;
    case 'release':
      held!.release().then(() => send({ type: 'released' }), fail);
      break;
    case 'contend':
      stopContending = false;
      contending = contend().catch(fail);
      break;
    case 'stop':
      stopContending = true;
      break;
    case 'take':
      void (contending ?? Promise.resolve()).then(() => take(command.waitTimeoutMs as number)).catch(fail);
      break;
    case 'exit':
      provider.close().finally(() => process.exit(0));
      break;
  }
});

process.on('disconnect', () => process.exit(0));

// Connected (a session opened, the fencing sequence there) before the test starts its clock.
provider
  .acquire(`warm-up-${process.pid}`)
  .then((lock) => lock.release())
  .then(() => send({ type: 'ready', pid: process.pid }), fail);
