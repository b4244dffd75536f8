/**
 * `npm run bench` — every scenario, this library and its peers interleaved in one
 * run, several rounds, medians. Writes bench/results/latest.json and regenerates
 * docs/BENCHMARKS.md (+ docs/bench/*.svg).
 *
 *   npm run bench                 full run (< 5 min on 2 cores)
 *   npm run bench -- --quick      < 1 min, smaller sizes; writes bench/results/quick.tmp.json only
 *   npm run bench -- --quick --docs   … and regenerates the docs from the quick run
 *   npm run bench -- --only 2,3   some scenarios; writes bench/results/partial.tmp.json only
 *   npm run bench -- --only 1,7 --merge   some scenarios, their entries replacing those of the same
 *                                 scenarios in latest.json (or node<major>.json); the others are kept,
 *                                 and the file says which run each scenario comes from (`parts`)
 *   npm run bench -- --render bench/results/latest.json   re-renders the docs from a results file
 *   npm run bench -- --node 20    on another Node.js major: writes bench/results/node20.json, the
 *                                 docs' second column (the reference run is Node 24: latest.json)
 *   npm run bench -- --hog        with a child process spinning one core beside the run (a busy host)
 *
 * Needs Redis (REDIS_URL, default redis://127.0.0.1:6379) and PostgreSQL
 * (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres); a backend that
 * is down is reported as failed, never skipped silently.
 */
import './lib/quiet-logger';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './lib/repo-root';
import { FULL, QUICK } from './config';
import type { Log } from './lib/interleave';
import { machineInfo } from './report/machine';
import { writeDocs } from './report/markdown';
import { runSettings } from './report/settings';
import { evaluateTargets } from './report/targets';
import type { BenchResults, ResultEntry } from './report/results';
import { httpOverheadScenario } from './scenarios/http-overhead.scenario';
import { holdersScenario } from './scenarios/holders.scenario';
import { hotKeyProcessesScenario } from './scenarios/hot-key-processes.scenario';
import { hotKeyScenario } from './scenarios/hot-key.scenario';
import { manyKeysScenario } from './scenarios/many-keys.scenario';
import { memoryScenario } from './scenarios/memory.scenario';
import type { Scenario } from './scenarios/scenario';
import { transferScenario } from './scenarios/transfer.scenario';
import { uncontendedScenario } from './scenarios/uncontended.scenario';
import { cleanupRedis, DATABASE_URL, MYSQL_URL, probeServices, REDIS_URL, runPrefix } from './services';
import { KEY_SET_SUBJECTS, SUBJECTS } from './subjects';
import { stopLocalReplica } from './lib/local-replica';

const ROOT = REPO_ROOT;
const SCENARIOS: Scenario[] = [
  uncontendedScenario,
  hotKeyScenario,
  hotKeyProcessesScenario,
  manyKeysScenario,
  memoryScenario,
  httpOverheadScenario,
  transferScenario,
  holdersScenario,
];

/** The Node.js major of the reference run (bench/results/latest.json). */
const REFERENCE_NODE = 24;

/** Runs of other Node.js majors (bench/results/node<major>.json): extra columns in the docs. */
function otherRuntimes(): BenchResults[] {
  const dir = path.join(ROOT, 'bench', 'results');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^node\d+\.json$/.test(f))
    .sort()
    .map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as BenchResults);
}

function parseArgs(argv: string[]): { quick: boolean; docs: boolean; hog: boolean; merge: boolean; only?: number[] } {
  const quick = argv.includes('--quick');
  const merge = argv.includes('--merge');
  const hog = argv.includes('--hog');
  const docs = argv.includes('--docs');
  const i = argv.findIndex((a) => a === '--only' || a.startsWith('--only='));
  let only: number[] | undefined;
  if (i >= 0) {
    const value = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
    only = (value ?? '')
      .split(',')
      .map(Number)
      .filter((n) => n >= 1 && n <= SCENARIOS.length);
    if (!only.length) throw new Error(`--only takes scenario numbers 1–${SCENARIOS.length}, e.g. --only 2,3`);
  }
  // A merged file must hold one kind of run: reference-sized scenarios only, and some of them.
  if (merge && (!only || quick)) throw new Error('--merge takes --only (the scenarios to replace) and no --quick');
  return { quick, docs, hog, merge, only };
}

/**
 * `--only … --merge`: `base` (the reference file) with the entries of the scenarios just
 * run replaced by this run's, the others kept. `parts` records which run each scenario
 * comes from, so a reader can tell that ratios of different scenarios were not taken at
 * the same moment (ratios *inside* one scenario always are).
 */
function mergeResults(base: BenchResults, fresh: BenchResults, replaced: readonly number[]): BenchResults {
  const order = (scenario: number): number => SCENARIOS.findIndex((s) => s.id === scenario);
  const kept = base.entries.filter((e) => !replaced.includes(e.scenario));
  const entries = [...kept, ...fresh.entries].sort((a, b) => order(a.scenario) - order(b.scenario));
  const baseParts = base.parts ?? [
    {
      scenarios: [...new Set(base.entries.map((e) => e.scenario))],
      generatedAt: base.generatedAt,
      command: base.command,
      durationSec: base.durationSec,
      load: base.machine.load,
    },
  ];
  const parts = [
    ...baseParts
      .map((part) => ({ ...part, scenarios: part.scenarios.filter((s) => !replaced.includes(s)) }))
      .filter((part) => part.scenarios.length > 0),
    {
      scenarios: [...replaced],
      generatedAt: fresh.generatedAt,
      command: fresh.command,
      durationSec: fresh.durationSec,
      load: fresh.machine.load,
    },
  ];
  const byId = new Map([...base.contenders, ...fresh.contenders].map((c) => [`${c.backend}:${c.id}`, c]));
  return {
    ...fresh,
    entries,
    targets: evaluateTargets(entries),
    contenders: [...byId.values()],
    settings: { ...base.settings, ...fresh.settings },
    skipped: [],
    parts,
  };
}

async function main(): Promise<void> {
  // Keeps the process alive while a library closes with only unref'd handles left
  // (without it Node would exit in the middle of an `await`, silently).
  const keepAlive = setInterval(() => undefined, 60_000);
  try {
    await runAll();
  } finally {
    clearInterval(keepAlive);
  }
}

async function runAll(): Promise<void> {
  const render = process.argv.indexOf('--render');
  if (render >= 0) {
    // Re-renders docs/BENCHMARKS.md and the charts from a results file (no measurement).
    const file = path.resolve(ROOT, process.argv[render + 1] ?? 'bench/results/latest.json');
    const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
    results.targets = evaluateTargets(results.entries);
    writeDocs(results, ROOT, otherRuntimes());
    process.stderr.write(`regenerated docs/BENCHMARKS.md and docs/bench/*.svg from ${path.relative(ROOT, file)}\n`);
    return;
  }
  const args = parseArgs(process.argv.slice(2));
  const config = args.quick ? QUICK : FULL;
  const started = Date.now();
  const log: Log = (line) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
  const services = await probeServices();
  const machine = machineInfo(services);
  if (process.env.BENCH_PRIVATE_REDIS)
    machine.redis += " — a private redis-server the benchmark started for this run (nobody else's commands in the counts)";
  // A busy host on demand: a child spinning one core for the whole run.
  const hog = args.hog ? spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }) : undefined;
  if (hog) machine.load += '; with a CPU hog (--hog: a child process spinning one core) for the whole run';
  log(
    `${config.mode} run on ${machine.cpuModel} × ${machine.cores}, Node ${machine.node}, Redis ${machine.redis}, PostgreSQL ${machine.postgres}`,
  );
  const prefix = runPrefix();
  const context = { config, services, subjects: { redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, mysqlUrl: MYSQL_URL, prefix }, log };

  const entries: ResultEntry[] = [];
  const skipped: string[] = [];
  const cleanup = async (): Promise<void> => {
    if (!services.redis.reachable) return;
    const deleted = await cleanupRedis(prefix).catch((error: Error) => (log(`Redis clean-up failed: ${error.message}`), 0));
    log(`removed ${deleted} Redis keys of ${prefix}`);
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    for (const scenario of SCENARIOS) {
      if (args.only && !args.only.includes(scenario.id)) {
        skipped.push(`${scenario.id}. ${scenario.title} (not selected: --only)`);
        continue;
      }
      log(`scenario ${scenario.id}: ${scenario.title}`);
      const t = Date.now();
      entries.push(...(await scenario.run(context)));
      log(`scenario ${scenario.id} done in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
  } finally {
    hog?.kill('SIGKILL');
    await cleanup();
    // The replica the `replicas: { acks: 1 }` contender asked for (bench/lib/local-replica.ts).
    await stopLocalReplica();
  }

  const argv = process.argv.slice(2).join(' ');
  const results: BenchResults = {
    generatedAt: new Date().toISOString(),
    mode: config.mode,
    command: `npm run bench${argv ? ` -- ${argv}` : ''}`,
    durationSec: Math.round((Date.now() - started) / 1000),
    machine,
    settings: runSettings(config),
    contenders: Object.entries(SUBJECTS).flatMap(([backend, specs]) =>
      [...specs, ...KEY_SET_SUBJECTS[backend as keyof typeof KEY_SET_SUBJECTS].filter((k) => !specs.includes(k))].map((s) => ({
        id: s.id,
        label: s.label,
        kind: s.kind,
        settings: s.settings,
        backend,
      })),
    ),
    entries,
    targets: evaluateTargets(entries),
    skipped,
  };
  // quick and partial results are scratch (git-ignored: bench/results/*.tmp.json); latest.json is the reference.
  const major = Number(process.versions.node.split('.')[0]);
  const reference = major === REFERENCE_NODE;
  const runtimeFile = reference ? 'latest.json' : `node${major}.json`;
  const file = args.merge ? runtimeFile : args.only ? 'partial.tmp.json' : args.quick ? 'quick.tmp.json' : runtimeFile;
  mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
  const target = path.join(ROOT, 'bench', 'results', file);
  let written = results;
  if (args.merge) {
    // The partial run is kept on its own too, as without --merge.
    writeFileSync(path.join(ROOT, 'bench', 'results', 'partial.tmp.json'), `${JSON.stringify(results, null, 2)}\n`);
    if (!existsSync(target)) throw new Error(`--merge: bench/results/${file} does not exist (run the full benchmark first)`);
    written = mergeResults(JSON.parse(readFileSync(target, 'utf8')) as BenchResults, results, args.only!);
  }
  writeFileSync(target, `${JSON.stringify(written, null, 2)}\n`);
  log(`wrote bench/results/${file}${args.merge ? ` (scenarios ${args.only!.join(', ')} replaced, the others kept)` : ''}`);
  if ((args.merge && reference) || (!args.only && ((!args.quick && reference) || args.docs))) {
    writeDocs(
      written,
      ROOT,
      otherRuntimes().filter((r) => r.machine.node !== results.machine.node),
    );
    log('regenerated docs/BENCHMARKS.md and docs/bench/*.svg');
  } else if (!args.only && !args.quick) {
    log(
      `Node ${major} is not the reference runtime (${REFERENCE_NODE}): docs/BENCHMARKS.md shows this run as an extra column once re-rendered (npm run bench -- --render bench/results/latest.json)`,
    );
  }
  for (const target of written.targets)
    log(
      `target ${target.status.toUpperCase().padEnd(12)} ${target.description}: ${target.measured}${target.gap ? ` (${target.gap})` : ''}`,
    );
  log(`done in ${results.durationSec} s`);
  // Everything is closed; if some library still holds a handle, say so rather than hang silently.
  setTimeout(() => {
    log('warning: the process did not exit on its own within 10 s (a connection left open); exiting');
    process.exit(0);
  }, 10_000).unref();
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
