/**
 * One app instance behind Redis Sentinel, in a process of its own: its
 * RedisLockProvider uses the app's ioredis Sentinel client (`redis.client`), and
 * `LOOPS` loops run sections over `KEYS` keys until told to stop. Every section is
 * recorded in a ledger on another Redis (`LEDGER_URL`, which no fail-over touches),
 * by atomic scripts:
 *
 * - its fencing token joins the key's set of issued tokens: one already there was
 *   handed out twice;
 * - a claim-first fenced read-modify-write: on entry the section claims the key's
 *   fence with its token (refused unless greater than every token claimed before: a
 *   refusal is a fencing-order inversion, or a token handed out twice) and reads the
 *   counter; on leaving it writes counter + 1, accepted only while its claim still
 *   stands (no newer holder claimed since);
 * - entering while another section of the key is inside is an overlap.
 *
 * Env: SENTINELS (JSON [{host, port}]), MASTER_NAME, KEY_PREFIX, KEYS, LOOPS,
 * LEASE_MS, REPLICA_ACKS (0: off), REPLICA_TIMEOUT_MS, LEDGER_URL, LEDGER_PREFIX.
 * Commands: {type:'stop'} → reports `done` with its counts, then exits.
 */
import { Redis } from 'ioredis';
import { LockBackendError, LockLostError, LockTimeoutError } from 'nestjs-serialized';
// Deep import: a worker that loads only what it uses starts in half the time.
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

type Command = { type: string; [field: string]: unknown };
const send = (message: Command): void => void process.send?.({ ...message, at: Date.now(), pid: process.pid });

const env = process.env;
const acks = Number(env.REPLICA_ACKS ?? 0);
const client = new Redis({
  sentinels: JSON.parse(env.SENTINELS!) as { host: string; port: number }[],
  name: env.MASTER_NAME!,
  // As the docs advise: the pool of Sentinels is asked again on every reconnect, and a
  // command is never replayed on another connection after a disconnect.
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
  sentinelRetryStrategy: (attempt) => Math.min(attempt * 100, 1000),
  // A demoted master answers READONLY until its connection is dropped: reconnect (through the Sentinels) at once.
  reconnectOnError: (error) => error.message.startsWith('READONLY'),
  enableOfflineQueue: true,
});
client.on('error', () => undefined);
const provider = new RedisLockProvider({
  client,
  keyPrefix: env.KEY_PREFIX!,
  leaseMs: Number(env.LEASE_MS ?? 2000),
  connectTimeoutMs: 1500,
  waitTimeoutMs: 3000,
  replicas: acks > 0 ? { acks, timeoutMs: Number(env.REPLICA_TIMEOUT_MS ?? 300) } : undefined,
});
const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: 1 });
const prefix = env.LEDGER_PREFIX!;

/** Entry: issued-token check, overlap check, fenced claim, counter read. Reply: {issuedBefore, overlapped, claimed, counter}. */
ledger.defineCommand('enter', {
  numberOfKeys: 4,
  lua: `
local issuedBefore = redis.call('SADD', KEYS[1], ARGV[1]) == 0 and 1 or 0
local overlapped = redis.call('SCARD', KEYS[2]) > 0 and 1 or 0
redis.call('SADD', KEYS[2], ARGV[2])
local fence = redis.call('GET', KEYS[3])
local claimed = 0
if not fence or tonumber(ARGV[1]) > tonumber(fence) then redis.call('SET', KEYS[3], ARGV[1]); claimed = 1 end
return {issuedBefore, overlapped, claimed, tonumber(redis.call('GET', KEYS[4]) or '0')}`,
});
/** Leaving: the fenced write (accepted only while this token's claim stands). Reply: 1 written, 0 refused. */
ledger.defineCommand('leave', {
  numberOfKeys: 3,
  lua: `
redis.call('SREM', KEYS[1], ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('SET', KEYS[3], ARGV[3]); return 1 end
return 0`,
});
type LedgerClient = Redis & {
  enter(
    issued: string,
    inside: string,
    fence: string,
    counter: string,
    token: string,
    member: string,
  ): Promise<[number, number, number, number]>;
  leave(inside: string, fence: string, counter: string, token: string, member: string, value: number): Promise<number>;
};
const book = ledger as LedgerClient;

const counts = {
  sections: 0,
  tokensTwice: 0,
  overlaps: 0,
  claimsRefused: 0,
  writesAccepted: 0,
  writesRefused: 0,
  backendErrors: 0,
  timeouts: 0,
  lost: 0,
  otherErrors: [] as string[],
};
let stopping = false;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function loop(index: number): Promise<void> {
  const keys = Number(env.KEYS ?? 3);
  let n = index;
  while (!stopping) {
    const key = `k${n++ % keys}`;
    const member = `${process.pid}:${index}:${n}`;
    try {
      const lock = await provider.acquire(key);
      const token = lock.fencingToken.toString();
      const k = (what: string) => `${prefix}:${key}:${what}`;
      try {
        const [issuedBefore, overlapped, claimed, value] = await book.enter(
          k('issued'),
          k('inside'),
          k('fence'),
          k('counter'),
          token,
          member,
        );
        counts.tokensTwice += issuedBefore;
        counts.overlaps += overlapped;
        if (!claimed) counts.claimsRefused++;
        await sleep(Math.random() * 10);
        const written = await book.leave(k('inside'), k('fence'), k('counter'), token, member, value + 1);
        if (written) counts.writesAccepted++;
        else counts.writesRefused++;
        counts.sections++;
      } finally {
        if (lock.lost) counts.lost++;
        await lock.release();
      }
    } catch (error) {
      if (error instanceof LockBackendError) counts.backendErrors++;
      else if (error instanceof LockTimeoutError) counts.timeouts++;
      else if (error instanceof LockLostError) counts.lost++;
      else if (counts.otherErrors.length < 5) counts.otherErrors.push(String((error as Error)?.message ?? error));
      await sleep(20);
    }
  }
}

let loops: Promise<void>[] = [];
process.on('message', (command: Command) => {
  if (command.type === 'start') loops = Array.from({ length: Number(env.LOOPS ?? 4) }, (_, i) => loop(i));
  if (command.type === 'stop') {
    stopping = true;
    void Promise.all(loops)
      .then(() => send({ type: 'done', counts }))
      .then(() => provider.close())
      .finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));

provider
  .tryAcquire(`warm-up-${process.pid}`)
  .then((lock) => lock?.release())
  .then(
    () => send({ type: 'ready' }),
    (error) => send({ type: 'failed', message: String(error?.stack ?? error) }),
  );
