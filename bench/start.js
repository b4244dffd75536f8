#!/usr/bin/env node
/**
 * `npm run bench [-- --quick …]`: compiles the benchmarks, the library and the example
 * app to dist/bench with tsc (emit only — `npm run typecheck` does the type checking),
 * copies the Redis provider's Lua scripts next to the compiled code, then runs
 * dist/bench/bench/run.js with the arguments given. Running compiled JavaScript keeps
 * the worker processes' start-up (4 + 3 + per-round children) short; the code that
 * runs is what ts-node would run (the same tsc emit).
 *
 * `BENCH_TS_NODE=1 npm run bench` runs the TypeScript sources under ts-node instead.
 */
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { copyLuaFiles, LIB_SOURCES } = require('../scripts/copy-lib-assets');

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'bench');
const args = process.argv.slice(2);

function run(argv, env) {
  const result = spawnSync(process.execPath, argv, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (process.env.BENCH_TS_NODE) {
  run(['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'bench/run.ts', ...args]);
  process.exit(0);
}

const started = Date.now();
run([require.resolve('typescript/bin/tsc'), '-p', 'bench/tsconfig.json', '--noCheck']);
copyLuaFiles(LIB_SOURCES, path.join(OUT, path.relative(ROOT, LIB_SOURCES)));
process.stderr.write(`compiled to dist/bench in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
run(['-r', path.join(OUT, 'bench', 'paths.js'), path.join(OUT, 'bench', 'run.js'), ...args]);
