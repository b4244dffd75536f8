/**
 * A reliability-suite process: one lock provider (SERIALIZED_DRIVER), a LockService,
 * and critical sections that do a fenced read-modify-write (the fenced write the
 * example app's docs recommend: `UPDATE … WHERE fence <= $token`). Overlaps and
 * duplicate executions are counted by a detector shared by every process (Redis
 * INCR/SADD on the shared server) or, in a single-process scenario, a local one.
 * Commands and results go over IPC.
 */
import { Redis } from 'ioredis';
import { Client } from 'pg';
import {
  InMemoryLockProvider,
  LockBackendError,
  LockBusyError,
  LockProvider,
  LockService,
  LockTimeoutError,
  PostgresLockProvider,
  RedisLockProvider,
  type Lock,
} from 'nestjs-serialized';

const env = process.env;
const DRIVER = env.SERIALIZED_DRIVER ?? 'memory';
const LEDGER = env.REL_LEDGER!; // schema-qualified table
/**
 * The fenced write and its entry in the writes log, in one statement: logged apart, a
 * holder stalled between the two would log its (in-order) write after a newer one's.
 */
const FENCED_WRITE = `WITH w AS (UPDATE ${LEDGER} SET value = $2 WHERE key = $1 AND fence = $3 RETURNING key)
  INSERT INTO ${LEDGER}_writes (key, token) SELECT key, $3 FROM w`;
const DETECTOR = env.REL_DETECTOR!; // Redis key prefix of the shared detector

function makeProvider(): LockProvider {
  if (DRIVER === 'redis')
    return new RedisLockProvider({ url: env.REDIS_URL!, keyPrefix: env.REL_PREFIX!, leaseMs: Number(env.REL_LEASE_MS ?? 30_000) });
  if (DRIVER === 'postgres')
    return new PostgresLockProvider({ connectionString: env.DATABASE_URL!, keyPrefix: env.REL_PREFIX!, applicationName: env.REL_PREFIX! });
  return new InMemoryLockProvider();
}

const provider = makeProvider();
const service = new LockService(provider);
const detector = new Redis(env.REL_DETECTOR_URL!, { lazyConnect: false, maxRetriesPerRequest: 3 });
const ledger = new Client({ connectionString: env.REL_LEDGER_URL!, application_name: `${env.REL_PREFIX}:ledger` });
const ledgerReady = ledger.connect();

export interface Stats {
  sections: number;
  overlaps: number;
  duplicates: number;
  accepted: number;
  rejected: number;
  busy: number;
  backend: number;
  lost: number;
  other: number;
  firstError?: string;
  orderViolations: number;
  localLost?: number;
  tokens: string[];
}

const fresh = (): Stats => ({
  sections: 0,
  overlaps: 0,
  duplicates: 0,
  accepted: 0,
  rejected: 0,
  busy: 0,
  backend: 0,
  lost: 0,
  other: 0,
  orderViolations: 0,
  tokens: [],
});
let stats = fresh();
const localInside = new Map<string, number>();
// The section's key:token per request, so a lock reported lost at release is recorded too.
const tokenOf = new Map<string, { id: string; lock: Lock }>();
const localRuns = new Set<string>();
const localValues = new Map<string, number>();
const localFence = new Map<string, bigint>();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The critical section: enter the detector, read, (hold), fenced write, leave. */
async function section(key: string, lock: Lock, requestId: string, holdMs: number, shared: boolean): Promise<void> {
  stats.sections++;
  if (shared) {
    // The shared detector: the tokens inside the key right now. A section whose
    // lock is lost leaves at once (its signal aborted: a correct section stops and
    // does not write), so an overlap is recorded with the tokens still inside,
    // and judged afterwards: overlapping a holder that was told it lost the lock
    // (and whose write the fence refuses) is not two holders of one lock.
    const token = lock.fencingToken.toString();
    tokenOf.set(requestId, { id: `${key}:${token}`, lock });
    const inside = `${DETECTOR}:in:${key}`;
    let left = false;
    const leave = async () => {
      if (left) return;
      left = true;
      await detector.srem(inside, token);
    };
    const onLost = () => {
      void detector.sadd(`${DETECTOR}:lost`, `${key}:${token}`);
      void leave();
    };
    lock.signal.addEventListener('abort', onLost, { once: true });
    // Told later, by the release (run() does not wait for its reply): still told.
    lock.signal.addEventListener('abort', () => void detector.sadd(`${DETECTOR}:lost`, `${key}:${token}`), { once: true });
    try {
      const [[, added], [, members]] = (await detector.multi().sadd(inside, token).smembers(inside).exec()) as [
        [null, number],
        [null, string[]],
      ];
      const others = members.filter((m) => m !== token);
      if (added && others.length) await detector.rpush(`${DETECTOR}:overlaps`, JSON.stringify({ key, token, others }));
      if ((await detector.sadd(`${DETECTOR}:runs`, requestId)) === 0) stats.duplicates++;
      // A fenced read-modify-write claims the row with its token before reading: a
      // holder that lost its lock and has not heard yet can then no longer write
      // (fencing the write alone lets such a holder write between a newer holder's
      // read and write — a lost update with every token in order).
      const claimed = await ledger.query(`UPDATE ${LEDGER} SET fence = $2 WHERE key = $1 AND fence <= $2 RETURNING value`, [key, token]);
      if (!claimed.rowCount) return void stats.rejected++;
      if (holdMs) await sleep(holdMs);
      if (lock.signal.aborted) return void stats.rejected++;
      const written = await ledger.query(FENCED_WRITE, [key, Number(claimed.rows[0]?.value ?? 0) + 1, token]);
      if (written.rowCount) {
        stats.accepted++;
      } else stats.rejected++;
    } finally {
      lock.signal.removeEventListener('abort', onLost);
      await leave();
    }
    return;
  }
  const inside = (localInside.get(key) ?? 0) + 1;
  localInside.set(key, inside);
  if (inside > 1) stats.overlaps++;
  if (localRuns.has(requestId)) stats.duplicates++;
  localRuns.add(requestId);
  const before = localValues.get(key) ?? 0;
  await (holdMs ? sleep(holdMs) : Promise.resolve());
  const last = localFence.get(key);
  if (last !== undefined && lock.fencingToken <= last) stats.rejected++;
  else {
    localFence.set(key, lock.fencingToken);
    localValues.set(key, before + 1);
    stats.accepted++;
  }
  localInside.set(key, (localInside.get(key) ?? 1) - 1);
}

function count(error: unknown): void {
  if (error instanceof LockBusyError || error instanceof LockTimeoutError) stats.busy++;
  else if (error instanceof LockBackendError) stats.backend++;
  else if ((error as Error)?.name === 'LockLostError') stats.lost++;
  else stats.other++;
  stats.firstError ??= (error as Error)?.message ?? String(error);
}

interface RunCommand {
  type: 'run';
  keys: string[];
  perKey: number;
  holdMs: number;
  shared: boolean;
  /** Check that each key's sections ran in the order they were issued. */
  checkOrder?: boolean;
  waitTimeoutMs?: number;
}

async function run(command: RunCommand): Promise<void> {
  const calls: Promise<void>[] = [];
  const order = new Map<string, number[]>();
  for (const key of command.keys) {
    for (let i = 0; i < command.perKey; i++) {
      const requestId = `${process.pid}:${key}:${i}:${Math.random()}`;
      calls.push(
        service
          .run(
            key,
            async (lock) => {
              if (command.checkOrder) (order.get(key) ?? order.set(key, []).get(key)!).push(i);
              await section(key, lock, requestId, command.holdMs, command.shared);
            },
            { waitTimeoutMs: command.waitTimeoutMs },
          )
          .then(
            // Told after the section ended: recorded by the section's own listener on the signal.
            () => undefined,
            async (error: unknown) => {
              count(error);
              const held = tokenOf.get(requestId);
              if ((error as Error)?.name === 'LockLostError' && held) await detector.sadd(`${DETECTOR}:lost`, held.id);
            },
          )
          .finally(() => tokenOf.delete(requestId)),
      );
    }
  }
  await Promise.all(calls);
  for (const ran of order.values()) ran.forEach((value, index) => void (value !== index && stats.orderViolations++));
  if (!command.shared) {
    let total = 0;
    for (const value of localValues.values()) total += value;
    stats.localLost = stats.accepted - total;
  }
}

/** Holds `key` until told to write and let go (the holder a fault hits). */
async function hold(key: string, holdMs: number): Promise<void> {
  await service
    .run(key, async (lock) => {
      if ((await detector.sadd(`${DETECTOR}:runs`, `${process.pid}:hold:${key}`)) === 0) stats.duplicates++;
      process.send!({ type: 'holding', token: lock.fencingToken.toString() });
      const token = lock.fencingToken.toString();
      // Claims the row first (see `section`), then holds.
      const claimed = await ledger.query(`UPDATE ${LEDGER} SET fence = $2 WHERE key = $1 AND fence <= $2 RETURNING value`, [key, token]);
      await sleep(holdMs);
      // The late write of a paused holder: storage refuses it once a newer holder claimed the row.
      const written = claimed.rowCount
        ? await ledger.query(FENCED_WRITE, [key, Number(claimed.rows[0]?.value ?? 0) + 1, token])
        : { rowCount: 0 };
      if (written.rowCount) {
        stats.accepted++;
      } else stats.rejected++;
      stats.sections++;
    })
    .catch(count);
}

process.on('message', (message: { type: string } & Record<string, unknown>) => {
  void (async () => {
    await ledgerReady;
    if (message.type === 'run') {
      await run(message as unknown as RunCommand);
      process.send!({ type: 'ran', stats });
    } else if (message.type === 'hold') {
      await hold(message.key as string, message.holdMs as number);
      process.send!({ type: 'held', stats });
    } else if (message.type === 'reset') {
      stats = fresh();
      process.send!({ type: 'reset-done' });
    } else if (message.type === 'close') {
      // The session audit's invariant: no advisory lock on a session of this provider without an owner.
      const unowned = provider instanceof PostgresLockProvider ? await provider.auditLocks() : 0;
      // After close: it waits for releases still on their way (run() does not), then nothing may be left.
      await (provider as unknown as { close(): Promise<void> }).close();
      const leaked = ((provider as { activeKeys?: number }).activeKeys ?? 0) + unowned;
      await ledger.end();
      // QUIT after the detector writes still on their way (a loss found by a release as the provider closed).
      await detector.quit();
      process.send!({ type: 'closed', stats, leaked, heapUsed: process.memoryUsage().heapUsed });
      process.exit(0);
    } else if (message.type === 'heap') {
      if (global.gc) global.gc();
      process.send!({
        type: 'heap',
        heapUsed: process.memoryUsage().heapUsed,
        activeKeys: (provider as { activeKeys?: number }).activeKeys ?? 0,
      });
    }
  })().catch((error: unknown) => process.send!({ type: 'error', message: (error as Error).message }));
});

void ledgerReady.then(() => process.send!({ type: 'ready' }));
