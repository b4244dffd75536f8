import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli } from './redis-sentinel';

const HOST = '127.0.0.1';

/**
 * A throwaway two-shard Redis Cluster in which only the first shard has a replica
 * (replica acknowledgements apply per shard, `WAIT` on the master that holds
 * the key). Shard A: `basePort` (slots 0-8191) with its replica `basePort + 2`; shard
 * B: `basePort + 1` (slots 8192-16383), no replica. Started by the suite that needs
 * it, from configs in a temp dir, and stopped after; the shared three-master cluster
 * of the global set-up (test/setup/redis-cluster.ts) has no replicas and stays so.
 */
export class ReplicatedShardCluster {
  private readonly processes: ChildProcess[] = [];

  private constructor(
    readonly dir: string,
    readonly ports: readonly [number, number, number],
  ) {}

  static async start(basePort: number): Promise<ReplicatedShardCluster> {
    const ports = [basePort, basePort + 1, basePort + 2] as const;
    const cluster = new ReplicatedShardCluster(fs.mkdtempSync(path.join(os.tmpdir(), 'serialized-cluster-replicas-')), ports);
    await Promise.all(ports.map((port) => cli(port, 'shutdown', 'nosave').catch(() => undefined)));
    for (const port of ports) cluster.startNode(port);
    await waitUntil(
      async () => (await Promise.all(ports.map(async (p) => (await cli(p, 'ping').catch(() => '')).trim() === 'PONG'))).every(Boolean),
      10_000,
      'the nodes',
    );
    const [a, b, replica] = ports;
    await cli(a, 'cluster', 'addslotsrange', '0', '8191');
    await cli(b, 'cluster', 'addslotsrange', '8192', '16383');
    await cli(a, 'cluster', 'meet', HOST, String(b));
    await cli(a, 'cluster', 'meet', HOST, String(replica));
    const idOfA = (await cli(a, 'cluster', 'myid')).trim();
    await waitUntil(async () => (await cli(replica, 'cluster', 'nodes')).includes(idOfA), 10_000, 'the replica to know shard A');
    await cli(replica, 'cluster', 'replicate', idOfA);
    await waitUntil(
      async () => {
        const states = await Promise.all(ports.map((p) => cli(p, 'cluster', 'info').catch(() => '')));
        const info = await cli(a, 'info', 'replication').catch(() => '');
        return states.every((s) => /cluster_state:ok/.test(s) && /cluster_known_nodes:3/.test(s)) && /slave0:.*state=online/.test(info);
      },
      20_000,
      'cluster_state:ok and the replica in sync',
    );
    return cluster;
  }

  /** Seed nodes for `new Cluster(...)`. */
  get nodes(): { host: string; port: number }[] {
    return this.ports.slice(0, 2).map((port) => ({ host: HOST, port }));
  }

  async stop(): Promise<void> {
    for (const child of this.processes) child.kill('SIGKILL');
    await Promise.all(
      this.processes.map((child) =>
        child.exitCode !== null || child.signalCode !== null
          ? undefined
          : new Promise((resolve) => (child.ref(), child.once('exit', resolve))),
      ),
    );
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private startNode(port: number): void {
    const dir = path.join(this.dir, String(port));
    fs.mkdirSync(dir);
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        HOST,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '2000',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: ['ignore', fs.openSync(path.join(dir, 'log.txt'), 'a'), 'inherit'] },
    );
    child.unref();
    this.processes.push(child);
  }
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`Redis Cluster (replicated shard) test set-up: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
