import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCES = ['libs', 'src', 'scripts', 'test', 'bench'];

/** Where the suites' child processes find the compiled tree: set by the jest global set-up. */
export const TEST_BUILD_ENV = 'SERIALIZED_TEST_BUILD';

/**
 * Compiles the repository's TypeScript to JavaScript once per `jest` run (emit only,
 * file by file, as ts-node's transpile-only mode would: `npm run typecheck` does the
 * type checking), into .cache/test-build, a folder that mirrors the repository,
 * with the Redis Lua scripts beside the code and a `register-paths.js` that maps
 * `nestjs-serialized` to the compiled library. Child processes (app instances,
 * workers) then start from JavaScript: no compiler in each of them, so a busy host
 * boots them in a fraction of the time. Files whose source did not change since the
 * last run are not compiled again.
 */
export function buildForTests(): string {
  // Inside the repository (.cache/ is git-ignored), so the compiled code finds node_modules.
  const out = path.join(ROOT, '.cache', 'test-build');
  const { options } = ts.convertCompilerOptionsFromJson(readTsconfig().compilerOptions, ROOT);
  const compilerOptions: ts.CompilerOptions = { ...options, sourceMap: false, inlineSourceMap: true, declaration: false, noEmit: false };
  for (const folder of SOURCES) walk(path.join(ROOT, folder), (file) => emit(file, out, compilerOptions));
  fs.writeFileSync(
    path.join(out, 'register-paths.js'),
    `require(${JSON.stringify(require.resolve('tsconfig-paths'))}).register({ baseUrl: __dirname, paths: ${JSON.stringify(readTsconfig().compilerOptions.paths)} });\n`,
  );
  return out;
}

function readTsconfig(): { compilerOptions: Record<string, unknown> & { paths: Record<string, string[]> } } {
  const parsed = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  if (parsed.error) throw new Error(ts.flattenDiagnosticMessageText(parsed.error.messageText, '\n'));
  return parsed.config;
}

function walk(dir: string, visit: (file: string) => void): void {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, visit);
    else visit(full);
  }
}

function emit(file: string, out: string, options: ts.CompilerOptions): void {
  const relative = path.relative(ROOT, file);
  const isTs = file.endsWith('.ts') && !file.endsWith('.d.ts');
  // package.json files stay out: jest would see a second package of the same name.
  if (!isTs && !file.endsWith('.lua') && !(file.endsWith('.json') && !file.endsWith('package.json'))) return;
  const target = path.join(out, isTs ? relative.replace(/\.ts$/, '.js') : relative);
  const sourceTime = fs.statSync(file).mtimeMs;
  if (fs.existsSync(target) && fs.statSync(target).mtimeMs >= sourceTime) return;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  if (!isTs) return fs.copyFileSync(file, target);
  const { outputText } = ts.transpileModule(fs.readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file });
  fs.writeFileSync(target, outputText);
}
