/**
 * A fresh consumer app in a folder outside the repository: the packed tarball in
 * its node_modules, next to the packages it is given, and nothing else (no parent
 * node_modules can lend it a package: the folder is made under the system's
 * temporary directory).
 *
 * Two ways to fill node_modules:
 * - `link` (what `npm test` does): the tarball is unpacked as npm would unpack it,
 *   and each other package is a symbolic link to the repository's installed copy.
 *   TypeScript and Node follow a link to its real path, so a linked package finds
 *   its own dependencies where the repository installed them, while the library,
 *   a real folder of the consumer, sees only what the consumer has: an optional
 *   peer the consumer lacks cannot be found from the library's files. Offline,
 *   a second or two.
 * - `npm` (CI's smoke run): `npm install` of the tarball and of each package at the
 *   version the repository uses, from the registry, as a user installs them.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

/** The repository's installed copy of `name`, or undefined. */
function installed(name) {
  const dir = path.join(ROOT, 'node_modules', name);
  return fs.existsSync(path.join(dir, 'package.json')) ? dir : undefined;
}

function versionOf(name) {
  return JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/** Whether a package ships its own type declarations (else its `@types/` package is needed). */
function hasOwnTypes(name) {
  const dir = installed(name);
  if (!dir) return false;
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (pkg.types || pkg.typings) return true;
  const exportsTypes = JSON.stringify(pkg.exports ?? {}).includes('"types"');
  return exportsTypes || fs.existsSync(path.join(dir, 'index.d.ts'));
}

/** `@types/x` for `x`, `@types/scope__name` for `@scope/name`. */
function typesPackageOf(name) {
  return `@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`;
}

/**
 * `names` plus, for each that has no declarations of its own, its `@types/`
 * package when the repository has one (pg → @types/pg).
 */
function withTypings(names) {
  const out = new Set(names);
  for (const name of names) {
    if (name.startsWith('@types/') || hasOwnTypes(name)) continue;
    const typings = typesPackageOf(name);
    if (installed(typings)) out.add(typings);
  }
  return [...out];
}

/**
 * Makes the consumer in `dir` (created; must not exist yet or be empty).
 * @param {{ dir: string, tarball: string, packages: string[], mode?: 'link' | 'npm' }} options
 * @returns the packages it has besides the library
 */
function createConsumer({ dir, tarball, packages, mode = 'link' }) {
  fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    `${JSON.stringify({ name: path.basename(dir), private: true, version: '0.0.0' }, null, 2)}\n`,
  );
  const missing = packages.filter((name) => !installed(name));
  if (missing.length) throw new Error(`the repository does not install ${missing.join(', ')} (npm ci first?)`);
  if (mode === 'npm') {
    const specs = packages.map((name) => `${name}@${versionOf(name)}`);
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball, ...specs], {
      cwd: dir,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    return packages;
  }
  // As npm unpacks a tarball: its `package/` folder becomes node_modules/<name>.
  const unpacked = path.join(dir, '.unpacked');
  fs.mkdirSync(unpacked);
  execFileSync('tar', ['-xzf', tarball, '-C', unpacked]);
  fs.renameSync(path.join(unpacked, 'package'), path.join(dir, 'node_modules', 'nestjs-serialized'));
  fs.rmSync(unpacked, { recursive: true });
  for (const name of packages) {
    const target = path.join(dir, 'node_modules', name);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.symlinkSync(installed(name), target, 'dir');
  }
  return packages;
}

module.exports = { createConsumer, withTypings, installed, versionOf, ROOT };
