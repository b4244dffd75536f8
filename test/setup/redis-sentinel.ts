import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A throwaway Redis master with replicas and three Sentinels (`redis-server
 * --sentinel`), for the suites that exercise fail-over (docs/providers/redis.md, *Fail-over*). Each suite starts
 * its own group on ports of its own (a fail-over changes who is master, so groups are
 * never shared), from configs generated in a temp dir, and stops it in `afterAll`.
 * Like the Cluster of the global set-up (test/setup/redis-cluster.ts) it needs
 * `redis-server` and `redis-cli` (Redis 6.2+) on the PATH.
 */
const run = promisify(execFile);
const HOST = '127.0.0.1';
/** The name the Sentinels monitor the master under (`new Redis({ sentinels, name })`). */
export const SENTINEL_MASTER_NAME = 'serialized-test';

export interface SentinelGroupOptions {
  /** Ports of the master and its replicas: `basePort`, `basePort + 1`, … */
  readonly basePort: number;
  /** Ports of the three Sentinels: `sentinelBasePort`, +1, +2. */
  readonly sentinelBasePort: number;
  /** Replicas of the master (default 1). */
  readonly replicas?: number;
  /** Sentinel `down-after-milliseconds` (default 1000): how soon a silent master counts as down. */
  readonly downAfterMs?: number;
}

/** A running group: its servers, and the moves a fail-over test makes. */
export class SentinelGroup {
  private readonly processes = new Map<number, ChildProcess>();

  private constructor(
    readonly dir: string,
    readonly dataPorts: readonly number[],
    readonly sentinelPorts: readonly number[],
    private readonly downAfterMs: number,
  ) {}

  /** Starts the master, its replicas and the Sentinels; resolves once the replicas are in sync and every Sentinel knows them. */
  static async start(options: SentinelGroupOptions): Promise<SentinelGroup> {
    for (const binary of ['redis-server', 'redis-cli']) {
      try {
        execFileSync(binary, ['--version'], { stdio: 'ignore' });
      } catch {
        throw new Error(
          `${binary} not found: the Sentinel suites start a master, replicas and Sentinels with it (Debian: apt-get install redis-server).`,
        );
      }
    }
    const replicas = options.replicas ?? 1;
    const dataPorts = Array.from({ length: replicas + 1 }, (_, i) => options.basePort + i);
    const sentinelPorts = [0, 1, 2].map((i) => options.sentinelBasePort + i);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'serialized-sentinel-'));
    const group = new SentinelGroup(dir, dataPorts, sentinelPorts, options.downAfterMs ?? 1000);
    // Leftovers of an interrupted run on these ports would join the group.
    await Promise.all([...dataPorts, ...sentinelPorts].map((port) => cli(port, 'shutdown', 'nosave').catch(() => undefined)));
    for (const port of dataPorts) group.startData(port, port === dataPorts[0] ? undefined : dataPorts[0]);
    await waitUntil(
      async () => (await Promise.all(dataPorts.map(pings))).every(Boolean),
      10_000,
      'the master and replicas to accept connections',
    );
    await waitUntil(() => group.replicasInSync(dataPorts[0], replicas), 15_000, 'the replicas to sync');
    for (const port of sentinelPorts) group.startSentinel(port, dataPorts[0]);
    await waitUntil(
      () => group.sentinelsReady(replicas),
      20_000,
      'every Sentinel to know the master, its replicas and the other Sentinels',
    );
    return group;
  }

  /** What `new Redis({ sentinels, name })` takes. */
  get sentinels(): { host: string; port: number }[] {
    return this.sentinelPorts.map((port) => ({ host: HOST, port }));
  }

  /** The port of the master as the Sentinels see it now. */
  async masterPort(): Promise<number> {
    const reply = await cli(this.sentinelPorts[0], 'sentinel', 'get-master-addr-by-name', SENTINEL_MASTER_NAME);
    return Number(reply.trim().split('\n')[1]);
  }

  /**
   * `SENTINEL FAILOVER`: the Sentinels promote a replica now, while the old master
   * still runs (it keeps accepting writes until they demote it). Resolves once the
   * Sentinels name the new master.
   */
  async failover(): Promise<{ from: number; to: number }> {
    const from = await this.masterPort();
    await cli(this.sentinelPorts[0], 'sentinel', 'failover', SENTINEL_MASTER_NAME);
    await waitUntil(async () => (await this.masterPort()) !== from, 20_000, 'the Sentinels to name a new master');
    return { from, to: await this.masterPort() };
  }

  /** Resolves with the new master's port once the Sentinels promoted a replica in place of `from` (killed or stopped). */
  async promoted(from: number): Promise<number> {
    await waitUntil(async () => (await this.masterPort().catch(() => from)) !== from, 30_000, 'the Sentinels to promote a replica');
    return this.masterPort();
  }

  /** Resolves once `port` runs as a replica (the Sentinels demoted a former master), or after `timeoutMs` (false). */
  async demoted(port: number, timeoutMs = 60_000): Promise<boolean> {
    return waitUntil(
      async () => /role:slave/.test(await cli(port, 'info', 'replication').catch(() => '')),
      timeoutMs,
      `redis on ${port} to be demoted`,
    ).then(
      () => true,
      () => false,
    );
  }

  /** kill -9 of a data server (the master, in a fail-over test). */
  kill(port: number): void {
    this.processes.get(port)?.kill('SIGKILL');
  }

  /** SIGSTOP / SIGCONT of a data server. */
  pause(port: number, paused: boolean): void {
    this.processes.get(port)?.kill(paused ? 'SIGSTOP' : 'SIGCONT');
  }

  /** Starts a killed data server again (as a replica of the current master: Sentinel would demote it anyway). */
  async restart(port: number): Promise<void> {
    this.startData(port, await this.masterPort());
    await waitUntil(() => pings(port), 10_000, `redis on ${port} to accept connections`);
  }

  /** Stops every server of the group and removes its files. */
  async stop(): Promise<void> {
    for (const child of this.processes.values()) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    await Promise.all(
      [...this.processes.values()].map((child) =>
        child.exitCode !== null || child.signalCode !== null
          ? undefined
          : new Promise((resolve) => (child.ref(), child.once('exit', resolve))),
      ),
    );
    this.processes.clear();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private startData(port: number, replicaOf: number | undefined): void {
    const conf = path.join(this.dir, `redis-${port}.conf`);
    fs.writeFileSync(
      conf,
      [
        `port ${port}`,
        `bind ${HOST}`,
        `dir ${this.dir}`,
        `dbfilename dump-${port}.rdb`,
        'save ""',
        'appendonly no',
        // Replicas report their offset every second (the default); WAIT asks them at once.
        ...(replicaOf === undefined ? [] : [`replicaof ${HOST} ${replicaOf}`]),
        '',
      ].join('\n'),
    );
    this.spawn(port, [conf]);
  }

  private startSentinel(port: number, master: number): void {
    const conf = path.join(this.dir, `sentinel-${port}.conf`);
    fs.writeFileSync(
      conf,
      [
        `port ${port}`,
        `bind ${HOST}`,
        `dir ${this.dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} ${HOST} ${master} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${this.downAfterMs}`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 10000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    this.spawn(port, [conf, '--sentinel']);
  }

  private spawn(port: number, args: string[]): void {
    const child = spawn('redis-server', args, { stdio: ['ignore', fs.openSync(path.join(this.dir, `log-${port}.txt`), 'a'), 'inherit'] });
    child.unref();
    this.processes.set(port, child);
  }

  private async replicasInSync(master: number, replicas: number): Promise<boolean> {
    const info = await cli(master, 'info', 'replication').catch(() => '');
    return (info.match(/^slave\d+:.*state=online/gm) ?? []).length >= replicas;
  }

  private async sentinelsReady(replicas: number): Promise<boolean> {
    const states = await Promise.all(
      this.sentinelPorts.map(async (port) => {
        const master = await cli(port, 'sentinel', 'master', SENTINEL_MASTER_NAME).catch(() => '');
        const fields = master.trim().split('\n');
        const field = (name: string) => fields[fields.indexOf(name) + 1];
        return Number(field('num-slaves')) >= replicas && Number(field('num-other-sentinels')) >= 2;
      }),
    );
    return states.every(Boolean);
  }
}

async function pings(port: number): Promise<boolean> {
  return (await cli(port, 'ping').catch(() => '')).trim() === 'PONG';
}

/** One redis-cli command against a local port. */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', HOST, '-p', String(port), ...args], { timeout: 5000 });
  return stdout;
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Redis Sentinel test set-up: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
