#!/usr/bin/env node
/**
 * `npm run bench [-- --quick …]`: compiles the benchmarks, the library and the example
 * app to dist/bench with tsc (emit only — `npm run typecheck` does the type checking),
 * copies the Redis provider's Lua scripts next to the compiled code, then runs
 * dist/bench/bench/run.js with the arguments given. Running compiled JavaScript keeps
 * the worker processes' start-up (4 + 3 + per-round children) short; the code that
 * runs is what ts-node would run (the same tsc emit).
 *
 * The benchmark and every contender process run on the reference runtime, Node.js 24
 * LTS, installed from the npm registry's `node` package into .cache/node/24 by
 * scripts/node-runtime.js (the script CI uses); `--node 20` (or 22, 26) runs on another
 * major, `--node current` on the Node that runs this script.
 *
 * `BENCH_TS_NODE=1 npm run bench` runs the TypeScript sources under ts-node instead.
 */
const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');
const { copyLuaFiles, LIB_SOURCES } = require('../scripts/copy-lib-assets');

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'bench');
const { nodeRuntime } = require('../scripts/node-runtime');

/** The Node.js the benchmark runs on: `--node <major|current>`, default the reference 24. */
function pickNode(argv) {
  const i = argv.findIndex((a) => a === '--node' || a.startsWith('--node='));
  let wanted = '24';
  if (i >= 0) {
    wanted = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
    argv.splice(i, argv[i].includes('=') ? 1 : 2);
  }
  if (wanted === 'current') return process.execPath;
  if (!/^\d{2}$/.test(String(wanted))) {
    process.stderr.write(`--node takes a Node.js major (22, 24, 26, …) or "current", got ${JSON.stringify(wanted)}\n`);
    process.exit(2);
  }
  try {
    return path.join(nodeRuntime(wanted), 'node');
  } catch (error) {
    process.stderr.write(
      `Could not install Node.js ${wanted} from the npm registry's "node" package (${error.message}).\nRun with --node current to use ${process.version}.\n`,
    );
    process.exit(1);
  }
}

const args = process.argv.slice(2);
const NODE = args.includes('--render') ? process.execPath : pickNode(args);

function run(argv, env, node = process.execPath) {
  const result = spawnSync(node, argv, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
  return result.status ?? 1;
}

function runOrExit(argv, env, node) {
  const status = run(argv, env, node);
  if (status !== 0) process.exit(status);
}

if (process.env.BENCH_TS_NODE) {
  runOrExit(['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'bench/run.ts', ...args], {}, NODE);
  process.exit(0);
}

/**
 * A Redis server of the run's own (`redis-server` on a free port, nothing kept on disk),
 * unless BENCH_REDIS_URL names one or `--shared-redis` is given: the commands-per-
 * acquisition counts (INFO commandstats deltas) then hold only the contenders' commands,
 * and nobody else's traffic shares the server with them.
 */
function startPrivateRedis() {
  if (process.env.BENCH_REDIS_URL || args.includes('--shared-redis') || args.includes('--render')) return undefined;
  const port = 16379 + (process.pid % 1000);
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    process.stderr.write(
      'redis-server not found: the benchmark uses REDIS_URL, shared with whatever else uses it (Redis command counts include their commands). Install redis-server (Debian: apt-get install redis-server) for a private one.\n',
    );
    return undefined;
  }
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ping = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
    if (ping.stdout && ping.stdout.trim() === 'PONG') break;
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      process.stderr.write(`the benchmark's own redis-server did not start on port ${port}; using REDIS_URL\n`);
      return undefined;
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
  process.stderr.write(`a private redis-server for this run on 127.0.0.1:${port}\n`);
  return { child, url: `redis://127.0.0.1:${port}` };
}

const started = Date.now();
runOrExit([require.resolve('typescript/bin/tsc'), '-p', 'bench/tsconfig.json', '--noCheck']);
copyLuaFiles(LIB_SOURCES, path.join(OUT, path.relative(ROOT, LIB_SOURCES)));
process.stderr.write(`compiled to dist/bench in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
const redis = startPrivateRedis();
const benchArgs = args.filter((a) => a !== '--shared-redis');
let status;
try {
  status = run(
    ['-r', path.join(OUT, 'bench', 'paths.js'), path.join(OUT, 'bench', 'run.js'), ...benchArgs],
    redis ? { BENCH_REDIS_URL: redis.url, BENCH_PRIVATE_REDIS: '1' } : {},
    NODE,
  );
} finally {
  redis?.child.kill('SIGKILL');
}
process.exit(status);
