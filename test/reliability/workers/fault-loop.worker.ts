/**
 * One process of the randomized fault run (fault-run.scenario.ts): LOOPS concurrent
 * loops, each taking a random key of KEYS with a random wait budget, mode, hand-off
 * mode and now and then an abort, and running a section that does a claim-first
 * fenced read-modify-write of the key's ledger row. Every section entry is logged
 * to the shared detector (key, token, process, time); a holder told it lost its lock
 * (signal aborted, or `lock.lost` at release) is recorded there too, so the run can
 * tell overlaps with a told holder from unexplained ones. As it leaves, a section reads
 * `lock.lost` (synchronously, as a correct section does before it leaves) and records
 * whether it knew of the loss then, so the run can tell a holder told before leaving
 * from one told only after it left (docs/reliability.md).
 *
 * SERIALIZED_DRIVER=naive is the control: a hand-rolled `SET NX PX` lock polled
 * every 10 ms, deleted unconditionally at the end, and an unfenced read-modify-write
 * — what the library replaces. It must show overlaps and lost updates under the same faults.
 *
 * REL_SHAPE_GROUP_KEYS set: the shaped run (shaped-fault-run.checker.ts). Keys below it
 * are group keys (every caller passes `concurrency: REL_SHAPE_LIMIT`, reads the row and
 * writes nothing); the others are reader/writer keys (readers `shared: true` read the
 * row, writers take the key alone and do the fenced read-modify-write). Every entry
 * logs its shape. REL_SHAPE_CONTROL=1 miswires it: group callers pass the largest limit
 * there is, writers pass `shared: true` and write unfenced — what the checker must catch.
 *
 * Commands over IPC: start, block (stall the event loop), quiesce (stop and report), close.
 */
import { Redis } from 'ioredis';
import { Client } from 'pg';
import {
  LockBackendError,
  LockBusyError,
  LockService,
  LockTimeoutError,
  MysqlLockProvider,
  PostgresLockProvider,
  RedisLockProvider,
  type LockProvider,
} from 'nestjs-serialized';

const env = process.env;
const DRIVER = env.SERIALIZED_DRIVER as 'redis' | 'postgres' | 'mysql' | 'naive';
const LEDGER = env.REL_LEDGER!;
/**
 * The fenced write and its entry in the writes log, in one statement: logged apart, a
 * holder stalled between the two would log its (in-order) write after a newer one's.
 */
const FENCED_WRITE = `WITH w AS (UPDATE ${LEDGER} SET value = $2 WHERE key = $1 AND fence = $3 RETURNING key)
  INSERT INTO ${LEDGER}_writes (key, token) SELECT key, $3 FROM w`;
const DETECTOR = env.REL_DETECTOR!;
const LEASE_MS = Number(env.REL_LEASE_MS ?? 2500);
const NAME = env.REL_WORKER!;
const GROUP_KEYS = env.REL_SHAPE_GROUP_KEYS === undefined ? undefined : Number(env.REL_SHAPE_GROUP_KEYS);
const LIMIT = Number(env.REL_SHAPE_LIMIT ?? 3);
const MISWIRED = env.REL_SHAPE_CONTROL === '1';

/** What a section is in the shaped run: a group member, a reader or a writer (`x`: the plain run's exclusive holder). */
type Shape = 'g' | 'r' | 'w' | 'x';

let seed = Number(env.REL_SEED ?? 1) >>> 0 || 1;
/** Seeded (xorshift32): the same seed makes the same choices. */
const random = (): number => {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 2 ** 32;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function makeProvider(): LockProvider | undefined {
  if (DRIVER === 'redis') return new RedisLockProvider({ url: env.REL_BACKEND_URL!, keyPrefix: env.REL_PREFIX!, leaseMs: LEASE_MS });
  if (DRIVER === 'postgres') {
    return new PostgresLockProvider({
      connectionString: env.REL_BACKEND_URL!,
      keyPrefix: env.REL_PREFIX!,
      applicationName: `${env.REL_PREFIX}:${NAME}`,
      leaseMs: LEASE_MS,
      sessionTimeoutMs: Number(env.REL_SESSION_TIMEOUT_MS ?? 3100),
    });
  }
  if (DRIVER === 'mysql') {
    return new MysqlLockProvider({
      url: env.REL_BACKEND_URL!,
      keyPrefix: env.REL_PREFIX!,
      leaseMs: LEASE_MS,
      sessionTimeoutMs: Number(env.REL_SESSION_TIMEOUT_MS ?? 3100),
    });
  }
  return undefined;
}

const provider = makeProvider();
const service = provider && new LockService(provider);
const naive = DRIVER === 'naive' ? new Redis(env.REL_BACKEND_URL!, { maxRetriesPerRequest: 1 }) : undefined;
naive?.on('error', () => undefined);
const detector = new Redis(env.REL_DETECTOR_URL!, { maxRetriesPerRequest: 3 });
const ledger = new Client({ connectionString: env.REL_LEDGER_URL!, application_name: `${env.REL_PREFIX}-ledger` });
const ledgerReady = ledger.connect();

const stats = {
  sections: 0,
  accepted: 0,
  rejected: 0,
  busy: 0,
  lost: 0,
  other: 0,
  backendAt: [] as number[],
  firstError: undefined as string | undefined,
};
let stopping = false;

/** The section: enter the detector, claim the row with the token, (hold), write if still ours, leave. */
async function section(
  key: string,
  lock: { fencingToken: bigint; signal?: AbortSignal; readonly lost?: unknown },
  holdMs: number,
  shape: Shape = 'x',
): Promise<void> {
  stats.sections++;
  const token = lock.fencingToken.toString();
  const member = `${process.pid}:${token}`;
  const inside = `${DETECTOR}:in:${key}`;
  let left = false;
  /** Leaves the detector; `told`: the section knew of the loss as it left (recorded in the same transaction). */
  const leave = async (told: boolean) => {
    if (left) return;
    left = true;
    const leaving = detector.multi();
    if (told) leaving.sadd(`${DETECTOR}:toldBeforeLeaving`, `${key}:${member}`);
    await leaving.srem(inside, member).exec();
  };
  // A section whose signal aborts leaves at once: it was told before leaving.
  const onLost = () => {
    void detector.sadd(`${DETECTOR}:lost`, `${key}:${member}`);
    void leave(true);
  };
  // Told already, between its grant and its section (a stall there): recorded as told.
  if (lock.signal?.aborted) void detector.sadd(`${DETECTOR}:lost`, `${key}:${member}`);
  lock.signal?.addEventListener('abort', onLost, { once: true });
  // Told later, by the release (run() does not wait for its reply): still told.
  lock.signal?.addEventListener('abort', () => void detector.sadd(`${DETECTOR}:lost`, `${key}:${member}`), { once: true });
  try {
    const [[, added], [, members]] = (await detector
      .multi()
      .sadd(inside, member)
      .smembers(inside)
      .rpush(`${DETECTOR}:entries`, JSON.stringify({ k: key, t: token, m: member, at: Date.now(), ...(shape === 'x' ? {} : { s: shape }) }))
      .exec()) as [[null, number], [null, string[]]];
    const others = members.filter((m) => m !== member);
    if (added && others.length) await detector.rpush(`${DETECTOR}:overlaps`, JSON.stringify({ key, member, others }));
    if (shape === 'g' || shape === 'r') {
      // Group members and readers read the row and write nothing: only writers change it.
      await ledger.query(`SELECT value FROM ${LEDGER} WHERE key = $1`, [key]);
      if (holdMs) await sleep(holdMs);
      return;
    }
    if (DRIVER === 'naive' || (shape === 'w' && MISWIRED)) {
      // What hand-rolled locks do: read, work, write what was read + 1.
      const read = await ledger.query(`SELECT value FROM ${LEDGER} WHERE key = $1`, [key]);
      if (holdMs) await sleep(holdMs);
      await ledger.query(`UPDATE ${LEDGER} SET value = $2 WHERE key = $1`, [key, Number(read.rows[0]?.value ?? 0) + 1]);
      await ledger.query(`INSERT INTO ${LEDGER}_writes (key, token) VALUES ($1, $2)`, [key, token]);
      stats.accepted++;
      return;
    }
    const claimed = await ledger.query(`UPDATE ${LEDGER} SET fence = $2 WHERE key = $1 AND fence <= $2 RETURNING value`, [key, token]);
    if (!claimed.rowCount) return void stats.rejected++;
    if (holdMs) await sleep(holdMs);
    // A correct section looks before it writes: a lock lost while it worked writes nothing.
    if (lock.lost) return void stats.rejected++;
    const written = await ledger.query(FENCED_WRITE, [key, Number(claimed.rows[0]?.value ?? 0) + 1, token]);
    if (!written.rowCount) return void stats.rejected++;
    stats.accepted++;
  } finally {
    // What a correct section does before it leaves: look (a synchronous read) whether the
    // lock is still its own. A holder whose key went to another holder while it was
    // inside must see the loss here, not after it left (a late renewal once hid it: docs/protocol.md, the `late-renewal` variant).
    const told = Boolean(lock.lost) || lock.signal?.aborted === true;
    lock.signal?.removeEventListener('abort', onLost);
    await leave(told);
  }
}

function count(error: unknown): void {
  if (error instanceof LockBusyError || error instanceof LockTimeoutError) stats.busy++;
  else if (error instanceof LockBackendError) stats.backendAt.push(Date.now());
  else if ((error as Error)?.name === 'LockLostError') stats.lost++;
  else {
    stats.other++;
    stats.firstError ??= (error as Error)?.stack ?? String(error);
  }
}

/** The control's lock: `SET NX PX`, polled; released with a plain DEL (it may delete someone else's). */
async function naiveRun(key: string, waitTimeoutMs: number, holdMs: number): Promise<void> {
  const lockKey = `${env.REL_PREFIX}:naive:${key}`;
  const until = Date.now() + waitTimeoutMs;
  for (;;) {
    const taken = await naive!.set(lockKey, String(process.pid), 'PX', LEASE_MS, 'NX').catch(() => null);
    if (taken === 'OK') break;
    if (Date.now() > until) return void stats.busy++;
    await sleep(10);
  }
  try {
    const token = BigInt(await naive!.incr(`${env.REL_PREFIX}:naive-token`));
    await section(key, { fencingToken: token }, holdMs);
  } finally {
    await naive!.del(lockKey).catch(() => undefined);
  }
}

async function loop(): Promise<void> {
  const keys = Number(env.REL_KEYS ?? 3);
  while (!stopping) {
    const index = Math.floor(random() * keys);
    const key = `k${index}`;
    const waitTimeoutMs = Math.round(200 + random() * 4800);
    const holdMs = random() < 0.05 ? Math.round(random() * 300) : Math.round(random() * 30);
    const mode = random() < 0.1 ? 'reject' : 'wait';
    const handoff = random() < 0.5 ? 'strict' : 'cohort';
    const aborter = random() < 0.1 ? new AbortController() : undefined;
    // Drawn after the plain run's draws, and only in the shaped run: the plain run's choices stay as they were.
    const shape: Shape = GROUP_KEYS === undefined ? 'x' : index < GROUP_KEYS ? 'g' : random() < 0.35 ? 'w' : 'r';
    const abortTimer = aborter && setTimeout(() => aborter.abort(new Error('the caller left')), Math.round(random() * 50));
    try {
      if (naive) {
        await naiveRun(key, waitTimeoutMs, holdMs);
        continue;
      }
      await service!.run(key, (lock) => section(key, lock, holdMs, shape), {
        waitTimeoutMs,
        mode,
        handoff,
        signal: aborter?.signal,
        ...shapeOptions(shape),
      });
    } catch (error) {
      if ((error as Error)?.message === 'the caller left') continue;
      count(error);
    } finally {
      if (abortTimer) clearTimeout(abortTimer);
    }
  }
}

/** The options of a shape (miswired in the control: no limit that binds, writers beside readers). */
function shapeOptions(shape: Shape): { concurrency?: number; shared?: boolean } {
  if (shape === 'g') return { concurrency: MISWIRED ? 1000 : LIMIT };
  if (shape === 'r' || (shape === 'w' && MISWIRED)) return { shared: true };
  return {};
}

let loops: Promise<void>[] = [];

process.on('message', (message: { type: string; ms?: number }) => {
  void (async () => {
    await ledgerReady;
    if (message.type === 'start') {
      loops = Array.from({ length: Number(env.REL_LOOPS ?? 8) }, () => loop());
      process.send!({ type: 'started' });
    } else if (message.type === 'block') {
      // A stalled event loop (a long synchronous task), past the lease.
      const until = Date.now() + (message.ms ?? 0);
      while (Date.now() < until) {
        // spin
      }
    } else if (message.type === 'quiesce') {
      stopping = true;
      await Promise.all(loops);
      // run() does not wait for a release's reply: let the last ones apply (bounded; what is left is a leak).
      const activeKeys = () => (provider as { activeKeys?: number } | undefined)?.activeKeys ?? 0;
      for (const until = Date.now() + 10_000; activeKeys() > 0 && Date.now() < until;) await sleep(20);
      // The session audit's invariant: no advisory lock on a session of ours without an owner.
      const unowned = provider instanceof PostgresLockProvider ? await provider.auditLocks() : 0;
      process.send!({ type: 'quiet', stats, unowned, activeKeys: activeKeys() });
    } else if (message.type === 'close') {
      await provider?.close();
      naive?.disconnect();
      await ledger.end();
      await detector.quit();
      process.send!({ type: 'closed' });
      process.exit(0);
    }
  })().catch((error: unknown) => process.send!({ type: 'error', message: String((error as Error)?.stack ?? error) }));
});

void ledgerReady.then(() => process.send!({ type: 'ready' }));
