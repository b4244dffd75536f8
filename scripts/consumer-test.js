#!/usr/bin/env node
/**
 * The consumer test: the package as a user gets it, in fresh apps.
 *
 * 1. `npm run pack:lib` into a temporary folder: the tarball a user installs.
 * 2. Two consumer apps (scripts/consumer/consumer-project.js): `required-peers`, with
 *    only the library's required peers (the in-memory driver: no ioredis, pg,
 *    @types/pg, bullmq, …), and `all-peers`, with every optional peer and the
 *    packages the docs' code blocks import.
 * 3. Each app type-checks its sources against the packed .d.ts in two
 *    configurations — `commonjs` (NestJS 10's `nest new` tsconfig) and `nodenext`
 *    (NestJS 11's) — both with `strict: true` and `skipLibCheck: false`, so the
 *    library's own declarations are checked too. `required-peers` compiles
 *    scripts/consumer/app/public-api.ts (the whole public surface) and smoke.ts;
 *    `all-peers` compiles those, peer-clients.ts and every ```ts block of README.md
 *    and docs/ (scripts/consumer/doc-blocks.js), each block a module of its own.
 *    The `nodenext` runs add an ES module (esm-import.mts).
 * 4. `required-peers` runs what it compiled: the smoke app serializes five
 *    concurrent requests, and missing-peers.js starts the features whose optional
 *    peer it lacks, each of which must stop start-up with a SerializedConfigError.
 * 5. `all-peers` runs docs/testing.md's recipes (whole spec files) with jest, once
 *    per jest.config.js the doc shows (ts-jest, @swc/jest), as a user would.
 *
 * Prints a report and exits non-zero on any error. `npm test` runs it through
 * test/package/consumer.alone-spec.ts (which reads `--json`); CI's
 * scripts/tarball-smoke.sh runs it with `--mode npm` (a real `npm install`).
 *
 *   node scripts/consumer-test.js [--mode link|npm] [--json <file>] [--keep]
 */
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createConsumer, withTypings, ROOT } = require('./consumer/consumer-project');
const { docBlocks, importedPackages, testingRecipes } = require('./consumer/doc-blocks');

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const MODE = arg('--mode') ?? 'link';
const JSON_OUT = arg('--json');
const KEEP = process.argv.includes('--keep');
const TSC = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
const APP = path.join(__dirname, 'consumer', 'app');

/** What `nest new` writes, with `strict` on and `skipLibCheck` off (the point of the test). */
const COMMON_OPTIONS = {
  declaration: true,
  removeComments: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  sourceMap: false,
  incremental: false,
  forceConsistentCasingInFileNames: true,
  noFallthroughCasesInSwitch: true,
  strict: true,
  skipLibCheck: false,
  rootDir: 'src',
};
const CONFIGURATIONS = {
  // NestJS 10's default: CommonJS, `node10` resolution (no `exports` map).
  commonjs: { module: 'commonjs', target: 'ES2021' },
  // NestJS 11's default.
  nodenext: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
    esModuleInterop: true,
    isolatedModules: true,
    target: 'ES2023',
  },
};

const peers = JSON.parse(fs.readFileSync(path.join(ROOT, 'libs', 'serialized', 'package.json'), 'utf8'));
const OPTIONAL = Object.keys(peers.peerDependenciesMeta ?? {}).filter((name) => peers.peerDependenciesMeta[name].optional);
const REQUIRED = Object.keys(peers.peerDependencies).filter((name) => !OPTIONAL.includes(name));
// What any Nest app has besides the library's peers: an HTTP platform and Node's typings.
const APP_PACKAGES = ['@nestjs/platform-express', '@types/node'];
// The docs' test recipes run under jest, with ts-jest and with @swc/jest (docs/testing.md).
const DOC_PACKAGES = ['jest', '@types/jest', 'ts-jest', '@swc/jest', '@swc/core'];

function pack(dir) {
  const out = execFileSync(process.execPath, [path.join(__dirname, 'pack-lib.js'), '--quiet', '--out', dir], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const tarball = out.trim().split('\n').pop();
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l && !l.endsWith('/'));
  return { path: tarball, bytes: fs.statSync(tarball).size, files: files.length };
}

function copy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
}

/** `tsc -p` in `dir`; every error as `{ file, line, code, message }` (file relative to `dir`). */
function typeCheck(dir, configuration, include) {
  const config = { compilerOptions: { ...COMMON_OPTIONS, ...CONFIGURATIONS[configuration], outDir: `dist/${configuration}` }, include };
  const file = `tsconfig.${configuration}.json`;
  fs.writeFileSync(path.join(dir, file), `${JSON.stringify(config, null, 2)}\n`);
  const run = spawnSync(process.execPath, [TSC, '-p', file, '--pretty', 'false'], { cwd: dir, encoding: 'utf8', maxBuffer: 64 << 20 });
  const errors = [];
  for (const line of `${run.stdout}${run.stderr}`.split('\n')) {
    const match = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/.exec(line);
    if (match) errors.push({ file: match[1], line: Number(match[2]), code: match[4], message: match[5] });
    else if (line.startsWith(' ') && errors.length) errors[errors.length - 1].message += `\n${line}`;
    else if (line.trim()) errors.push({ file: file, line: 0, code: 'tsc', message: line });
  }
  if (run.status !== 0 && errors.length === 0) errors.push({ file, line: 0, code: 'tsc', message: `tsc exited ${run.status}` });
  return errors;
}

function runNode(dir, script, args = [], env = {}) {
  const run = spawnSync(process.execPath, [script, ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, ...env },
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}`.trim() };
}

/** Each recipe of docs/testing.md as a spec file, run by jest under each documented config. */
function runRecipes(dir) {
  const { recipes, jestConfigs } = testingRecipes(ROOT);
  fs.mkdirSync(path.join(dir, 'recipes'));
  for (const recipe of recipes) fs.writeFileSync(path.join(dir, 'recipes', recipe.name), recipe.code);
  // ts-jest compiles with the app's tsconfig.json: NestJS 11's, as the type check above.
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    `${JSON.stringify({ compilerOptions: { ...COMMON_OPTIONS, ...CONFIGURATIONS.nodenext, rootDir: '.' } }, null, 2)}\n`,
  );
  // Not the environment of a jest that may be running this script.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('JEST_') && name !== 'NODE_OPTIONS'));
  return jestConfigs.map((config) => {
    const file = `jest.${config.name}.config.js`;
    const results = path.join(dir, `jest.${config.name}.json`);
    fs.writeFileSync(path.join(dir, file), config.code);
    const t0 = Date.now();
    const run = spawnSync(
      process.execPath,
      [
        path.join(dir, 'node_modules', 'jest', 'bin', 'jest.js'),
        '-c',
        file,
        '--ci',
        '--roots',
        '<rootDir>/recipes',
        '--json',
        '--outputFile',
        results,
      ],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...env, CI: 'true' },
        timeout: 180_000,
      },
    );
    const outcome = fs.existsSync(results) ? JSON.parse(fs.readFileSync(results, 'utf8')) : undefined;
    return {
      config: config.name,
      ms: Date.now() - t0,
      status: run.status,
      files: (outcome?.testResults ?? []).map((r) => ({
        file: path.basename(r.name),
        passed: r.assertionResults.filter((a) => a.status === 'passed').length,
        failed: r.assertionResults
          .filter((a) => a.status !== 'passed')
          .map((a) => `${a.fullName}: ${a.failureMessages.join(' ').split('\n')[0]}`),
        error: r.status === 'failed' && r.assertionResults.length === 0 ? r.message.split('\n').slice(0, 8).join('\n') : undefined,
      })),
      output: outcome ? '' : `${run.stdout}${run.stderr}`.slice(-3000),
    };
  });
}

function main() {
  const started = Date.now();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'serialized-consumer-'));
  const report = { mode: MODE, work, configurations: [], docs: { blocks: [], problems: [] } };
  try {
    const lap = () => Date.now() - started;
    report.tarball = pack(path.join(work, 'pack'));
    report.timings = { packMs: lap() };

    const docs = docBlocks(ROOT);
    report.docs.problems = docs.problems;
    const compiled = docs.blocks.filter((block) => !block.fragment);
    const docImports = [...new Set(compiled.flatMap((block) => importedPackages(block.code)))].filter(
      (name) => name !== 'nestjs-serialized',
    );

    const consumers = {
      'required-peers': withTypings([...REQUIRED, ...APP_PACKAGES]),
      'all-peers': withTypings([...new Set([...REQUIRED, ...OPTIONAL, ...APP_PACKAGES, ...DOC_PACKAGES, ...docImports])]),
    };
    report.consumers = {};
    for (const [name, packages] of Object.entries(consumers)) {
      const dir = path.join(work, name);
      createConsumer({ dir, tarball: report.tarball.path, packages, mode: MODE });
      report.consumers[name] = packages;
      for (const source of ['public-api.ts', 'smoke.ts', 'missing-peers.ts', 'esm-import.mts'])
        copy(path.join(APP, source), path.join(dir, 'src', source));
    }
    const allPeers = path.join(work, 'all-peers');
    copy(path.join(APP, 'peer-clients.ts'), path.join(allPeers, 'src', 'peer-clients.ts'));
    // One module per block (`export {}` keeps a block without imports from being a script).
    const blockFiles = new Map();
    compiled.forEach((block, i) => {
      const file = `src/docs/${String(i + 1).padStart(2, '0')}-${block.file.replace(/[/.]/g, '_')}-L${block.line}.ts`;
      fs.mkdirSync(path.dirname(path.join(allPeers, file)), { recursive: true });
      fs.writeFileSync(path.join(allPeers, file), `${block.code}\nexport {};\n`);
      blockFiles.set(file, block);
      report.docs.blocks.push({ file: block.file, line: block.line, errors: [] });
    });
    report.docs.fragments = docs.blocks.filter((block) => block.fragment).map(({ file, line, reason }) => ({ file, line, reason }));
    report.timings.consumersMs = lap() - report.timings.packMs;

    for (const name of Object.keys(consumers)) {
      for (const configuration of Object.keys(CONFIGURATIONS)) {
        const include = configuration === 'nodenext' ? ['src/**/*.ts', 'src/**/*.mts'] : ['src/**/*.ts'];
        const t0 = Date.now();
        const errors = typeCheck(path.join(work, name), configuration, include);
        const entry = { name: `${name} / ${configuration}`, ms: Date.now() - t0, errors: [] };
        for (const error of errors) {
          const block = blockFiles.get(error.file);
          if (block) {
            report.docs.blocks
              .find((b) => b.file === block.file && b.line === block.line)
              .errors.push({
                configuration,
                at: `${block.file}:${block.line + error.line - 1}`,
                code: error.code,
                message: error.message,
              });
          } else entry.errors.push(`${error.file}:${error.line}: ${error.code} ${error.message}`);
        }
        report.configurations.push(entry);
      }
    }

    const required = path.join(work, 'required-peers');
    report.smoke = runNode(required, 'dist/commonjs/smoke.js', [], { SERIALIZED_DRIVER: 'memory' });
    report.missingPeers = runNode(required, 'dist/commonjs/missing-peers.js');
    report.recipes = runRecipes(allPeers);
    report.timings.totalMs = Date.now() - started;
  } finally {
    if (!KEEP) fs.rmSync(work, { recursive: true, force: true });
  }
  return report;
}

function print(report) {
  const out = [];
  out.push(
    `tarball: ${path.basename(report.tarball.path)}, ${report.tarball.files} files, ${(report.tarball.bytes / 1024).toFixed(1)} kB (mode ${report.mode})`,
  );
  for (const [name, packages] of Object.entries(report.consumers)) out.push(`consumer ${name}: ${packages.join(' ')}`);
  for (const c of report.configurations) {
    out.push(
      `${c.errors.length === 0 ? 'ok  ' : 'FAIL'} ${c.name}: ${c.errors.length} errors outside the doc blocks (${(c.ms / 1000).toFixed(1)} s)`,
    );
    for (const e of c.errors) out.push(`       ${e}`);
  }
  const failed = report.docs.blocks.filter((b) => b.errors.length);
  out.push(
    `${failed.length === 0 && report.docs.problems.length === 0 ? 'ok  ' : 'FAIL'} doc blocks: ${report.docs.blocks.length} compiled, ${report.docs.fragments.length} fragments skipped, ${failed.length} failed`,
  );
  for (const p of report.docs.problems) out.push(`       ${p}`);
  for (const b of failed) for (const e of b.errors) out.push(`       ${e.at}: ${e.code} ${e.message} (${e.configuration})`);
  out.push(`${report.smoke.status === 0 ? 'ok  ' : 'FAIL'} smoke: ${report.smoke.output}`);
  out.push(`${report.missingPeers.status === 0 ? 'ok  ' : 'FAIL'} missing peers: ${report.missingPeers.output}`);
  for (const run of report.recipes) {
    const ok = run.status === 0 && run.files.length > 0 && run.files.every((f) => f.failed.length === 0 && !f.error && f.passed > 0);
    out.push(
      `${ok ? 'ok  ' : 'FAIL'} docs/testing.md recipes with ${run.config}: ${run.files.map((f) => `${f.file} ${f.passed} passed`).join(', ')} (${(run.ms / 1000).toFixed(1)} s)`,
    );
    for (const f of run.files) for (const line of [...f.failed, ...(f.error ? [f.error] : [])]) out.push(`       ${f.file}: ${line}`);
    if (run.output) out.push(run.output);
  }
  out.push(`time: ${(report.timings.totalMs / 1000).toFixed(1)} s (pack ${(report.timings.packMs / 1000).toFixed(1)} s)`);
  return out.join('\n');
}

function passed(report) {
  return (
    report.configurations.every((c) => c.errors.length === 0) &&
    report.docs.blocks.every((b) => b.errors.length === 0) &&
    report.docs.problems.length === 0 &&
    report.smoke.status === 0 &&
    report.missingPeers.status === 0 &&
    report.recipes.length >= 2 &&
    report.recipes.every(
      (run) => run.status === 0 && run.files.length > 0 && run.files.every((f) => f.failed.length === 0 && !f.error && f.passed > 0),
    )
  );
}

if (require.main === module) {
  const report = main();
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(report, null, 2));
  process.stdout.write(`${print(report)}\n`);
  process.exit(passed(report) ? 0 : 1);
}

module.exports = { main, print, passed };
