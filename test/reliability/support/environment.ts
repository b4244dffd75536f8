import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess, type WorkerMessage } from '../../support/processes';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../support/services';

export type Driver = 'memory' | 'redis' | 'postgres';

/** What a worker counted (see workers/section.worker.ts). */
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
  orderViolations: number;
  /** Single-process (local detector) runs: accepted writes the final values do not show. */
  localLost?: number;
  firstError?: string;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A child that spins one core for as long as the scenario runs: a busy host. */
export function startCpuHog(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

/** Runs `scenario` with a CPU hog beside it for its whole length, and stops the hog whatever happens. */
export async function withCpuHog<T>(scenario: () => Promise<T>): Promise<T> {
  const hog = startCpuHog();
  try {
    return await scenario();
  } finally {
    hog.kill('SIGKILL');
  }
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A throwaway redis-server on a port of its own (never the shared one restarted). */
export class ThrowawayRedis {
  private child: ChildProcess | undefined;
  constructor(readonly port: number) {}
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    for (;;) {
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined); // not up yet: the loop tries again
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        probe.disconnect();
        if (this.child.exitCode !== null) throw new Error('redis-server exited at start');
        await sleep(50);
      }
    }
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }
}

/** The ledger (PostgreSQL, own schema) and the shared detector (Redis, own prefix) of one run. */
export class Ledger {
  readonly schema = `rel_${process.pid}_${Date.now().toString(36)}`;
  readonly table = `${this.schema}.ledger`;
  readonly detectorPrefix = `reliability:${this.schema}`;
  readonly pg = new Client({ connectionString: TEST_DATABASE_URL });
  readonly redis = new Redis(TEST_REDIS_URL);

  async open(): Promise<void> {
    await this.pg.connect();
    await this.pg.query(`CREATE SCHEMA ${this.schema}`);
    await this.pg.query(
      `CREATE TABLE ${this.table} (key text PRIMARY KEY, value int NOT NULL DEFAULT 0, fence numeric NOT NULL DEFAULT 0)`,
    );
    await this.pg.query(`CREATE TABLE ${this.table}_writes (id bigserial PRIMARY KEY, key text NOT NULL, token numeric NOT NULL)`);
  }

  async seed(keys: string[]): Promise<void> {
    await this.pg.query(`INSERT INTO ${this.table} (key) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [keys]);
  }

  /** Lost updates (accepted writes the final values do not show) and fencing violations (a token not above the previous writer's). */
  async verdict(keys: string[]): Promise<{ lostUpdates: number; fencingViolations: number }> {
    const { rows: sums } = await this.pg.query(
      `SELECT coalesce(sum(l.value), 0)::int AS total, (SELECT count(*)::int FROM ${this.table}_writes w WHERE w.key = ANY($1)) AS writes FROM ${this.table} l WHERE l.key = ANY($1)`,
      [keys],
    );
    const { rows: bad } = await this.pg.query(
      `SELECT count(*)::int AS n FROM (SELECT token <= lag(token) OVER (PARTITION BY key ORDER BY id) AS bad FROM ${this.table}_writes WHERE key = ANY($1)) t WHERE bad`,
      [keys],
    );
    return { lostUpdates: Math.max(0, sums[0].writes - sums[0].total), fencingViolations: bad[0].n };
  }

  /** A holder killed inside its section never leaves the detector: the test does it for it. */
  async leaveDetector(key: string): Promise<void> {
    await this.redis.del(`${this.detectorPrefix}:in:${key}`);
  }

  /**
   * Overlaps the shared detector saw: a section entered while another was inside.
   * `excused`: every other section inside had lost its lock and been told so
   * (signal aborted; it wrote nothing or the fence refused it).
   */
  async overlaps(): Promise<{ overlaps: number; excused: number }> {
    const entries = (await this.redis.lrange(`${this.detectorPrefix}:overlaps`, 0, -1)).map(
      (e) => JSON.parse(e) as { key: string; others: string[] },
    );
    const lost = new Set(await this.redis.smembers(`${this.detectorPrefix}:lost`));
    const excused = entries.filter((e) => e.others.every((other) => lost.has(`${e.key}:${other}`))).length;
    await this.redis.del(`${this.detectorPrefix}:overlaps`);
    return { overlaps: entries.length - excused, excused };
  }

  workerEnv(): Record<string, string> {
    return {
      REL_LEDGER: this.table,
      REL_LEDGER_URL: TEST_DATABASE_URL,
      REL_DETECTOR: this.detectorPrefix,
      REL_DETECTOR_URL: TEST_REDIS_URL,
    };
  }

  async close(): Promise<void> {
    await this.pg.query(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE`);
    await this.pg.end();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.detectorPrefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await this.redis.del(...keys);
    } while (cursor !== '0');
    this.redis.disconnect();
  }
}

/** Starts a section worker and waits until it is ready (no fixed time: readiness). */
export async function startWorker(name: string, env: Record<string, string>): Promise<WorkerProcess> {
  const worker = WorkerProcess.start(name, 'test/reliability/workers/section.worker.ts', env);
  await worker.waitForType('ready', 180_000);
  return worker;
}

/** Sends a command and waits for its answer, however long the scenario makes it. */
export async function ask(worker: WorkerProcess, message: WorkerMessage, answer: string, timeoutMs = 600_000): Promise<WorkerMessage> {
  const before = worker.messages.length;
  worker.send(message);
  return worker.waitFor((m) => m.type === answer && worker.messages.indexOf(m) >= before, timeoutMs);
}

/**
 * Redis keys left under `prefix` on `url`, not counting the fencing counter (the
 * one key meant to outlive locks); then removes them all (the run's own prefix).
 */
export async function redisKeysUnder(url: string, prefix: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 2 });
  const judge = new RedisLockProvider({ client: redis, keyPrefix: prefix });
  let cursor = '0';
  let count = 0;
  try {
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      count += keys.filter((key) => !judge.isFencingCounter(key)).length;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    await judge.close();
    redis.disconnect();
  }
  return count;
}

/** Advisory locks held or awaited, and sessions, of `applicationName`. */
export async function pgLeftovers(pg: Client, applicationName: string): Promise<{ locks: number; sessions: number }> {
  const { rows } = await pg.query(
    `SELECT (SELECT count(*)::int FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND a.application_name = $1) AS locks,
            (SELECT count(*)::int FROM pg_stat_activity WHERE application_name = $1) AS sessions`,
    [applicationName],
  );
  return rows[0];
}

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version']).status === 0;
}
