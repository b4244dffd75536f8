#!/usr/bin/env node
/**
 * `npm run pack:lib`: builds the library and packs it, offline, into
 * `nestjs-serialized-<version>.tgz` at the repository root (gitignored), then
 * prints the tarball's path. Install it into an app with
 * `npm install /path/to/nestjs-serialized-<version>.tgz`.
 *
 * Before packing it checks what would ship: compiled JavaScript, `.d.ts`, the Lua
 * scripts, README, LICENSE, CHANGELOG and package.json — no TypeScript sources,
 * specs or source maps. `--quiet` prints only the path.
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'libs', 'serialized');
const quiet = process.argv.includes('--quiet');
const say = (line) => quiet || process.stderr.write(`${line}\n`);

const npm = (args, options = {}) =>
  execFileSync('npm', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });

say('== building the library (npm run build:lib)');
npm(['run', '--silent', 'build:lib']);

const REQUIRED = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'index.js', 'index.d.ts', 'testing/index.js', 'testing/index.d.ts'];
const ALLOWED = /(\.js|\.d\.ts|\.lua|^package\.json|^README\.md|^LICENSE|^CHANGELOG\.md)$/;
const FORBIDDEN = /(\.spec\.|\.map$|(?<!\.d)\.ts$)/;

// `npm pack --dry-run --json` lists exactly what `files` lets in.
const [dry] = JSON.parse(npm(['pack', '--dry-run', '--json', '--offline', '--ignore-scripts', OUT]));
const files = dry.files.map((f) => f.path);
const problems = [
  ...REQUIRED.filter((f) => !files.includes(f)).map((f) => `missing ${f}`),
  ...files.filter((f) => FORBIDDEN.test(f) || !ALLOWED.test(f)).map((f) => `must not ship ${f}`),
];
if (problems.length > 0) {
  process.stderr.write(`pack:lib: the package is not sealed:\n  ${problems.join('\n  ')}\n`);
  process.exit(1);
}

const [packed] = JSON.parse(npm(['pack', '--json', '--offline', '--ignore-scripts', '--pack-destination', ROOT, OUT]));
const tarball = path.join(ROOT, packed.filename);
if (!fs.existsSync(tarball)) {
  process.stderr.write(`pack:lib: npm pack reported ${packed.filename} but ${tarball} does not exist\n`);
  process.exit(1);
}
say(`== ${packed.name}@${packed.version}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(1)} kB packed, ${(packed.unpackedSize / 1024).toFixed(1)} kB unpacked`);
process.stdout.write(`${tarball}\n`);
