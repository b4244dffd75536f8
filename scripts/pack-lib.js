#!/usr/bin/env node
/**
 * `npm run pack:lib`: builds the library and packs it, offline, into
 * `nestjs-serialized-<version>.tgz` at the repository root (gitignored), then
 * prints the tarball's path. Install it into an app with
 * `npm install /path/to/nestjs-serialized-<version>.tgz`.
 *
 * Before packing it checks what would ship: compiled JavaScript, `.d.ts`, the Lua
 * scripts, README, LICENSE, CHANGELOG and package.json — no TypeScript sources,
 * specs or source maps. `--quiet` prints only the path. `--out <dir>` builds and packs
 * into that folder instead (the consumer test packs into a temporary one, so a
 * running `npm test` never touches dist/ or the tarball at the root).
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const outAt = process.argv.indexOf('--out');
const DEST = outAt > 0 ? path.resolve(process.argv[outAt + 1]) : ROOT;
const BUILD = outAt > 0 ? path.join(DEST, 'build') : path.join(ROOT, 'dist', 'libs');
const OUT = path.join(BUILD, 'serialized');
const quiet = process.argv.includes('--quiet');
const say = (line) => quiet || process.stderr.write(`${line}\n`);

const npm = (args, options = {}) =>
  execFileSync('npm', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });

say('== building the library (npm run build:lib)');
// The steps of `npm run build:lib`, without a nested npm.
fs.rmSync(BUILD, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc', { paths: [ROOT] }), '-p', 'libs/serialized/tsconfig.lib.json', '--outDir', OUT],
  { cwd: ROOT, stdio: 'inherit' },
);
execFileSync(process.execPath, [path.join(__dirname, 'copy-lib-assets.js'), OUT], { cwd: ROOT, stdio: 'inherit' });

const REQUIRED = [
  'package.json',
  'README.md',
  'LICENSE',
  'CHANGELOG.md',
  'index.js',
  'index.d.ts',
  'testing/index.js',
  'testing/index.d.ts',
];
const ALLOWED = /(\.js|\.d\.ts|\.lua|^package\.json|^README\.md|^LICENSE|^CHANGELOG\.md)$/;
const FORBIDDEN = /(\.spec\.|\.map$|(?<!\.d)\.ts$)/;

// One `npm pack`: its JSON report lists exactly what `files` let in; a tarball that
// ships something it must not is deleted again.
const [packed] = JSON.parse(npm(['pack', '--json', '--offline', '--ignore-scripts', '--pack-destination', DEST, OUT]));
const tarball = path.join(DEST, packed.filename);
const files = packed.files.map((f) => f.path);
const problems = [
  ...REQUIRED.filter((f) => !files.includes(f)).map((f) => `missing ${f}`),
  ...files.filter((f) => FORBIDDEN.test(f) || !ALLOWED.test(f)).map((f) => `must not ship ${f}`),
];
if (problems.length > 0) {
  fs.rmSync(tarball, { force: true });
  process.stderr.write(`pack:lib: the package is not sealed:\n  ${problems.join('\n  ')}\n`);
  process.exit(1);
}
if (!fs.existsSync(tarball)) {
  process.stderr.write(`pack:lib: npm pack reported ${packed.filename} but ${tarball} does not exist\n`);
  process.exit(1);
}
say(
  `== ${packed.name}@${packed.version}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(1)} kB packed, ${(packed.unpackedSize / 1024).toFixed(1)} kB unpacked`,
);
process.stdout.write(`${tarball}\n`);
