#!/usr/bin/env node
/**
 * Checks this library against another NestJS major: `npm run compat -- 10` or `-- 12`.
 *
 * Copies the repository's tracked files into a scratch folder, pins every @nestjs
 * package to that major, installs, type-checks, runs the test suites and the demo on
 * all three drivers, boots an ES-module app against the built library, and exits
 * non-zero on any failure. NestJS 11 is what `npm test` runs; this is for the other
 * majors the peer ranges admit. Needs the same Redis and PostgreSQL as `npm test`,
 * and the npm registry for the install.
 *
 * NestJS 10 is CommonJS, so the suites run under jest as usual. NestJS 12 ships ES
 * modules only: the library (CommonJS) loads it through Node's require(esm), which
 * jest's module system cannot do on Node 20, so the suites run on node:test with a
 * small jest shim (jest-on-node-test.js); specs that need jest-only machinery (fake
 * timers, isolated module registries) must not import NestJS and are left to jest.
 */
const { spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

const MAJORS = {
  10: {
    '@nestjs/common': '^10.4.0',
    '@nestjs/core': '^10.4.0',
    '@nestjs/platform-express': '^10.4.0',
    '@nestjs/platform-fastify': '^10.4.0',
    '@nestjs/testing': '^10.4.0',
    '@nestjs/bullmq': '^10.2.0',
  },
  12: {
    '@nestjs/common': '^12.0.0',
    '@nestjs/core': '^12.0.0',
    '@nestjs/platform-express': '^12.0.0',
    '@nestjs/platform-fastify': '^12.0.0',
    '@nestjs/testing': '^12.0.0',
    '@nestjs/bullmq': '^12.0.0',
  },
};

const JEST_ONLY = /\bjest\.(useFakeTimers|useRealTimers|advanceTimersByTime|runAllTimers|isolateModules|resetModules|mock|doMock)\b/;

function fail(message) {
  console.error(`nest-compat: ${message}`);
  process.exit(1);
}

function run(step, command, args, cwd) {
  console.log(`\n=== ${step}: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { cwd, stdio: 'inherit', env: { ...process.env, FORCE_COLOR: '0' } });
  if (result.status !== 0) fail(`${step} failed (exit ${result.status ?? result.signal})`);
}

function trackedFiles() {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file && fs.existsSync(path.join(ROOT, file)));
}

function specFiles(dir) {
  return trackedFiles()
    .filter((file) => /\.(spec|e2e-spec)\.ts$/.test(file))
    .filter((file) => file.startsWith('libs/') || file.startsWith('src/') || file.startsWith('test/'))
    .map((file) => ({ file, text: fs.readFileSync(path.join(dir, file), 'utf8') }));
}

function main() {
  const major = process.argv[2];
  const pins = MAJORS[major];
  if (!pins) fail(`name the NestJS major to check: one of ${Object.keys(MAJORS).join(', ')} (11 is what npm test runs)`);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `nestjs-serialized-nest${major}-`));
  console.log(`nest-compat: NestJS ${major} in ${dir}`);
  for (const file of trackedFiles()) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const [name, range] of Object.entries(pins)) {
    if (manifest.dependencies[name]) manifest.dependencies[name] = range;
    else manifest.devDependencies[name] = range;
  }
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  fs.rmSync(path.join(dir, 'package-lock.json'), { force: true });

  run('install', 'npm', ['install', '--no-audit', '--no-fund'], dir);
  const installed = require(path.join(dir, 'node_modules', '@nestjs', 'core', 'package.json')).version;
  if (installed.split('.')[0] !== String(major)) fail(`installed @nestjs/core ${installed}, not ${major}.x`);
  console.log(`nest-compat: @nestjs/core ${installed}`);

  run('typecheck', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit'], dir);
  run('build', 'npm', ['run', 'build'], dir);
  run('ES-module app', process.execPath, ['scripts/compat/esm-consumer.mjs'], dir);

  if (major === '12') {
    const specs = specFiles(dir);
    const jestOnly = specs.filter((spec) => JEST_ONLY.test(spec.text));
    for (const spec of jestOnly) {
      if (/from '@nestjs\//.test(spec.text)) fail(`${spec.file} needs jest-only APIs and imports NestJS: it cannot be checked here`);
      console.log(`nest-compat: ${spec.file} uses jest-only APIs and no NestJS: left to npm test`);
    }
    const files = specs.filter((spec) => !jestOnly.includes(spec)).map((spec) => spec.file);
    run(
      'tests (node:test)',
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'scripts/compat/run-suites.ts', ...files],
      dir,
    );
  } else {
    run('tests (jest)', 'npx', ['jest'], dir);
  }

  run('demo (memory)', 'npm', ['run', 'demo'], dir);
  run('demo (redis, 2 instances)', 'npm', ['run', 'demo', '--', '--driver', 'redis', '--instances', '2'], dir);
  run('demo (postgres, 2 instances)', 'npm', ['run', 'demo', '--', '--driver', 'postgres', '--instances', '2'], dir);

  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`\nnest-compat: NestJS ${installed}: typecheck, build, ES-module app, tests and demo passed`);
}

main();
