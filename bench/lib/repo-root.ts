import { existsSync } from 'node:fs';
import path from 'node:path';

/** The repository root, whether the benchmark runs from bench/ (ts-node) or dist/bench/bench (compiled). */
export const REPO_ROOT = (() => {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'libs', 'serialized', 'package.json'))) return dir;
  }
  throw new Error(`repository root not found above ${__dirname}`);
})();

/** True when running the compiled JavaScript in dist/bench. */
export const COMPILED = __filename.endsWith('.js');

/** The directory holding bench/, libs/ and src/ as they run: the repository, or dist/bench. */
export const RUN_ROOT = path.resolve(__dirname, '..', '..');
