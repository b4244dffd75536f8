import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';

/** Port of the replica the benchmark starts beside the bench Redis (the `replicas: { acks: 1 }` rows). */
const REPLICA_PORT = Number(process.env.BENCH_REPLICA_PORT ?? 6397);

/**
 * Makes sure the bench Redis at `url` has a replica in sync, starting one on
 * `127.0.0.1:REPLICA_PORT` (`redis-server --replicaof`, no persistence) when it has
 * none: the contender with `replicas: { acks: 1 }` needs one for its `WAIT`s. Several
 * worker processes may ask at once: the port lets one replica start, the others wait
 * for it. {@link stopLocalReplica} shuts it down after the run.
 */
export async function ensureLocalReplica(url: string): Promise<void> {
  const master = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  try {
    if (await inSync(master)) return;
    const { hostname, port } = new URL(url);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-replica-'));
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(REPLICA_PORT),
        '--bind',
        '127.0.0.1',
        '--replicaof',
        hostname,
        port || '6379',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      {
        stdio: 'ignore',
        detached: true,
      },
    );
    child.on('error', () => undefined);
    child.unref();
    const deadline = Date.now() + 20_000;
    while (!(await inSync(master))) {
      if (Date.now() > deadline) throw new Error(`no replica of ${url} in sync within 20 s (redis-server on ${REPLICA_PORT})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    master.disconnect();
  }
}

/** Shuts down the replica {@link ensureLocalReplica} started, if any. */
export async function stopLocalReplica(): Promise<void> {
  const replica = new Redis(REPLICA_PORT, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  replica.on('error', () => undefined);
  try {
    await replica.connect();
    await replica.shutdown('NOSAVE').catch(() => undefined);
  } catch {
    // None running.
  } finally {
    replica.disconnect();
  }
}

async function inSync(master: Redis): Promise<boolean> {
  return /^slave\d+:.*state=online/m.test(await master.info('replication'));
}
