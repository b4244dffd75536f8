/**
 * Preloaded (`node -r`) by the compiled benchmark and its workers: maps the package
 * name `nestjs-serialized` to the compiled library next to it (dist/bench/libs/…),
 * as tsconfig `paths` does for the TypeScript sources.
 */
import path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
import tsconfigPaths = require('tsconfig-paths');

tsconfigPaths.register({
  baseUrl: path.resolve(__dirname, '..'),
  paths: { 'nestjs-serialized': ['libs/serialized/src'], 'nestjs-serialized/*': ['libs/serialized/src/*'] },
});
