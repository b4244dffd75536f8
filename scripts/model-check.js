#!/usr/bin/env node
/**
 * `npm run model-check`: every protocol model of models/model-check.json checked
 * exhaustively by SPIN, in each of its configurations, and each of its broken variants
 * (the model with one guard removed) refuted — or the run fails. Prints, per model and
 * configuration, the states explored and the verdict, and one line per broken variant:
 * `broken <model>/<variant>: refuted (<property>)`. A property is named by the comment
 * on the line of the assertion SPIN reports (`assert(...)   /* P2 *\/`).
 *
 * Needs `spin` and a C compiler (Debian: apt-get install spin gcc). Work files go to
 * .cache/model-check/ (git-ignored).
 */
'use strict';
const { execFile, execFileSync, spawnSync } = require('node:child_process');
const os = require('node:os');
const { promisify } = require('node:util');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const WORK = path.join(ROOT, '.cache', 'model-check');
// Bounds of one exhaustive run: SPIN's depth limit and memory (MB) for the state table.
const DEPTH = 1_000_000;
const MEMORY_MB = 4096;
// Checks run side by side, one per core (a check is one single-threaded compile and search).
const PARALLEL = Math.max(1, Math.min(os.availableParallelism?.() ?? os.cpus().length, Number(process.env.MODEL_CHECK_JOBS) || Infinity));
const run = promisify(execFile);

/** What one pan run reported. */
function parsePanOutput(output) {
  const states = /(\d+) states, stored/.exec(output);
  const errors = /errors: (\d+)/.exec(output);
  const invalidEnd = /invalid end state/.test(output) && /pan:\d+: invalid end state/.test(output);
  const assertion = /pan:\d+: (assertion violated[^\n]*)/.exec(output);
  // A search cut short (the depth bound, or the memory bound: "Search not completed" without an error) proves nothing.
  const depthLimit =
    /max search depth too small/.test(output) ||
    /reached -DMEMLIM bound/.test(output) ||
    (/Search not completed/.test(output) && !(errors && Number(errors[1]) > 0));
  return {
    states: states ? Number(states[1]) : undefined,
    errors: errors ? Number(errors[1]) : undefined,
    violation: assertion ? assertion[1].replace(/\s*\(at depth \d+\)\s*$/, '') : invalidEnd ? 'invalid end state' : undefined,
    depthLimit,
  };
}

/** The property an assertion line names (`/* P3 *\/`, `/* INV *\/`, `/* P2: … *\/`), from the trail's error line. */
function propertyAt(modelSource, trailOutput) {
  const line = /\.pml:(\d+), Error: assertion violated/.exec(trailOutput);
  if (!line) return /invalid end state/.test(trailOutput) ? 'P5' : undefined;
  const text = modelSource.split('\n')[Number(line[1]) - 1] ?? '';
  const named = /\/\*\s*(P\d+|INV)\b/.exec(text);
  return named ? named[1] : undefined;
}

/** The properties a configuration asserts: those left by the preprocessor (comments kept) with its defines. */
function propertiesChecked(file, defines) {
  const source = execFileSync('gcc', ['-E', '-P', '-C', '-x', 'c', ...defines.map((d) => `-D${d}`), path.join(ROOT, file)], {
    encoding: 'utf8',
  });
  const named = [...source.matchAll(/assert\([^;]*?\)[;\s}]*\/\*\s*(P\d+|INV)\b/g)].map((m) => m[1]);
  // The INV monitor asserts `false` under its guard; its comment is on the same line.
  return [...new Set(named)].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

function requireTools() {
  for (const [tool, args, install] of [
    ['spin', ['-V'], 'spin'],
    ['gcc', ['--version'], 'gcc'],
  ]) {
    const probe = spawnSync(tool, args, { stdio: 'ignore' });
    if (probe.error || probe.status !== 0) {
      console.error(`model-check needs ${tool}, which is not installed (Debian: apt-get install -y ${install}).`);
      process.exit(2);
    }
  }
}

/** Runs SPIN on `file` with `defines`; returns the verdict and, on a violation, the property it names. */
async function check(file, defines, label, optimize = '-O1') {
  const dir = path.join(WORK, label.replace(/[^A-Za-z0-9_.-]+/g, '_'));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const model = path.basename(file);
  fs.copyFileSync(path.join(ROOT, file), path.join(dir, model));
  const D = defines.map((d) => `-D${d}`);
  const started = Date.now();
  await run('spin', [...D, '-a', model], { cwd: dir });
  // -O1: the verifier runs for seconds, the compiler's -O2 would take longer than the search
  // (a model may ask for -O0: the Redis model's verifier compiles in seconds at -O0, minutes at -O1).
  await run('gcc', [optimize, '-DSAFETY', `-DMEMLIM=${MEMORY_MB}`, '-o', 'pan', 'pan.c'], { cwd: dir });
  // pan exits non-zero when it finds an error: its output is the verdict either way.
  const pan = await run('./pan', [`-m${DEPTH}`], { cwd: dir, maxBuffer: 64 * 1024 * 1024 }).catch((error) => error);
  const result = { ...parsePanOutput(pan.stdout ?? ''), seconds: (Date.now() - started) / 1000, property: undefined };
  if (result.errors && fs.existsSync(path.join(dir, `${model}.trail`))) {
    const trail = await run('spin', [...D, '-t', model], { cwd: dir, maxBuffer: 64 * 1024 * 1024 }).catch((error) => error);
    result.property = propertyAt(fs.readFileSync(path.join(dir, model), 'utf8'), `${trail.stdout ?? ''}${trail.stderr ?? ''}`);
  }
  return result;
}

/** Runs `jobs` (functions returning promises) `width` at a time; `onResult(i, value)` is called in the jobs' order. */
async function inOrder(jobs, width, onResult) {
  const results = new Array(jobs.length);
  let next = 0;
  let printed = 0;
  const flush = () => {
    while (printed < jobs.length && results[printed] !== undefined) onResult(printed, results[printed++]);
  };
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
      flush();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker));
}

async function main() {
  requireTools();
  const models = JSON.parse(fs.readFileSync(path.join(ROOT, 'models', 'model-check.json'), 'utf8'));
  const only = process.argv.slice(2);
  const problems = [];
  const started = Date.now();
  const jobs = [];
  for (const [name, model] of Object.entries(models)) {
    if (only.length && !only.includes(name)) continue;
    for (const configuration of model.configurations) {
      jobs.push({
        run: () => check(model.file, configuration.defines, `${name}-${configuration.name}`, model.optimize),
        report(result) {
          const properties = propertiesChecked(model.file, configuration.defines);
          const ok = result.errors === 0 && !result.depthLimit;
          console.log(
            `${name} (${configuration.name}): ${result.states?.toLocaleString('en-US') ?? '?'} states, ${result.seconds.toFixed(1)} s — ` +
              `${ok ? `holds: ${properties.join(', ')}` : `FAILS: ${result.property ?? '?'} (${result.violation ?? (result.depthLimit ? 'search cut short by the depth or memory bound' : 'no verdict')})`}`,
          );
          if (!ok) problems.push(`${name} (${configuration.name}) ${result.property ?? result.violation ?? 'failed'}`);
        },
      });
    }
    for (const variant of model.broken) {
      jobs.push({
        run: () => check(model.file, variant.defines, `${name}-broken-${variant.name}`, model.optimize),
        report(result) {
          if (result.errors && result.property) {
            console.log(
              `broken ${name}/${variant.name}: refuted (${result.property}) — ${variant.breaks}; ${result.states?.toLocaleString('en-US')} states, ${result.seconds.toFixed(1)} s`,
            );
          } else {
            console.log(`broken ${name}/${variant.name}: NOT REFUTED — ${variant.breaks}`);
            problems.push(`broken ${name}/${variant.name} not refuted`);
          }
        },
      });
    }
  }
  // The longest checks first would finish sooner, but the report keeps the file's order.
  await inOrder(
    jobs.map((job) => job.run),
    PARALLEL,
    (i, result) => jobs[i].report(result),
  );
  console.log(`model-check: ${((Date.now() - started) / 1000).toFixed(0)} s (${PARALLEL} at a time)`);
  if (problems.length) {
    console.error(`model-check failed: ${problems.join('; ')}`);
    process.exit(1);
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
module.exports = { parsePanOutput, propertyAt };
