import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A throwaway Redis Cluster (three masters, no replicas) for the Cluster suites,
 * started by jest's global set-up on local ports (default 7101-7103) with its data
 * under `.test-services/` (git-ignored). Idempotent: a cluster already running on
 * those ports is reused. Several jest runs may share it: each registers itself, and
 * the last one to finish shuts the nodes down.
 */
const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.join(ROOT, '.test-services', 'redis-cluster');
const BASE_PORT = Number(process.env.TEST_REDIS_CLUSTER_BASE_PORT ?? 7101);
// The ports belong to the machine, not to a checkout: every jest run of every checkout
// (a second clone, a git worktree) registers in one place, so that one finishing never
// shuts the cluster down under another's suites.
const USERS = path.join(os.tmpdir(), `nestjs-serialized-redis-cluster-${BASE_PORT}-users`);
const PORTS = [BASE_PORT, BASE_PORT + 1, BASE_PORT + 2];
const HOST = '127.0.0.1';

const HOW_TO =
  'The Redis Cluster suites start a throwaway cluster with redis-server and redis-cli (Redis 6.2+), ' +
  'which are not installed. Install them (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis).';

/** Seed addresses of the cluster, as `TEST_REDIS_CLUSTER_NODES` carries them to the suites. */
export const REDIS_CLUSTER_NODES = PORTS.map((port) => `${HOST}:${port}`).join(',');

export async function startRedisCluster(): Promise<void> {
  requireBinaries();
  fs.mkdirSync(USERS, { recursive: true });
  fs.writeFileSync(path.join(USERS, String(process.pid)), '');

  if (!(await clusterIsUp())) {
    for (const port of PORTS) if (!(await pings(port))) startNode(port);
    await waitUntil(async () => (await Promise.all(PORTS.map(pings))).every(Boolean), 10_000, 'the cluster nodes to accept connections');
    if (!(await clusterIsUp())) await createCluster();
    await waitUntil(clusterIsUp, 20_000, 'cluster_state:ok on every node');
  }
  process.env.TEST_REDIS_CLUSTER_NODES = REDIS_CLUSTER_NODES;
}

export async function stopRedisCluster(): Promise<void> {
  try {
    fs.rmSync(path.join(USERS, String(process.pid)), { force: true });
  } catch {
    // Nothing registered.
  }
  if (otherLiveUsers().length > 0) return;
  await Promise.all(PORTS.map((port) => cli(port, 'shutdown', 'nosave').catch(() => undefined)));
}

function requireBinaries(): void {
  for (const binary of ['redis-server', 'redis-cli']) {
    try {
      execFileSync(binary, ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error(`${binary} not found. ${HOW_TO}`);
    }
  }
}

function startNode(port: number): void {
  const dir = path.join(DIR, String(port));
  fs.mkdirSync(dir, { recursive: true });
  // A node that starts from an old cluster config would rejoin a cluster that no longer exists.
  fs.rmSync(path.join(dir, 'nodes.conf'), { force: true });
  execFileSync('redis-server', [
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
    '--daemonize',
    'yes',
    '--logfile',
    path.join(dir, 'redis.log'),
    '--pidfile',
    path.join(dir, 'redis.pid'),
  ]);
}

async function createCluster(): Promise<void> {
  // Nodes left half-configured by an interrupted run start over (these are throwaway nodes).
  for (const port of PORTS) {
    await cli(port, 'flushall').catch(() => undefined);
    await cli(port, 'cluster', 'reset', 'hard').catch(() => undefined);
  }
  await run('redis-cli', ['--cluster', 'create', ...PORTS.map((port) => `${HOST}:${port}`), '--cluster-replicas', '0', '--cluster-yes'], {
    timeout: 30_000,
  });
}

async function clusterIsUp(): Promise<boolean> {
  const states = await Promise.all(
    PORTS.map(async (port) => {
      const info = await cli(port, 'cluster', 'info').catch(() => '');
      return /cluster_state:ok/.test(info) && /cluster_slots_assigned:16384/.test(info) && /cluster_known_nodes:3/.test(info);
    }),
  );
  return states.every(Boolean);
}

async function pings(port: number): Promise<boolean> {
  return (await cli(port, 'ping').catch(() => '')).trim() === 'PONG';
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', HOST, '-p', String(port), ...args], { timeout: 5000 });
  return stdout;
}

function otherLiveUsers(): string[] {
  let entries: string[];
  try {
    entries = fs.readdirSync(USERS);
  } catch {
    return [];
  }
  return entries.filter((name) => {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      fs.rmSync(path.join(USERS, name), { force: true });
      return false;
    }
  });
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Redis Cluster test set-up: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
