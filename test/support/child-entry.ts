import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * How a test starts `file` (a TypeScript path relative to the repository root) in a
 * child process: from the JavaScript the jest global set-up compiled
 * (`SERIALIZED_TEST_BUILD`, see test/setup/compiled-build.ts) when there is one, so
 * the child's start-up costs no compiler on a busy host; otherwise under ts-node
 * (transpile-only), as when a suite runs outside jest's global set-up.
 */
export function childEntry(file: string): { args: string[]; env: NodeJS.ProcessEnv } {
  const build = process.env.SERIALIZED_TEST_BUILD;
  const relative = path.isAbsolute(file) ? path.relative(ROOT, file) : file;
  const compiled = build ? path.join(build, relative.replace(/\.ts$/, '.js')) : undefined;
  if (build && compiled && fs.existsSync(compiled)) {
    return { args: ['-r', path.join(build, 'register-paths.js'), compiled], env: {} };
  }
  return {
    args: ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', path.join(ROOT, relative)],
    env: { TS_NODE_PROJECT: path.join(ROOT, 'tsconfig.json') },
  };
}
