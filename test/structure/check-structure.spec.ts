import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The structure check's own rules (scripts/check-structure.js), run on a copy of
 * the library: clean it passes; a waiter's state assigned outside its owner, a new
 * host interface, an import cycle, or a file named off `<thing>.<role>.ts` each
 * fail it, named.
 */
const ROOT = path.join(__dirname, '..', '..');
const LIB = path.join(ROOT, 'libs', 'serialized', 'src');
const WAITERS = 'providers/redis/redis.backend.ts';

function check(change?: (lib: string) => void, rules?: 'imports'): { status: number | null; output: string } {
  const lib = mkdtempSync(path.join(tmpdir(), 'check-structure-'));
  try {
    cpSync(LIB, lib, { recursive: true });
    change?.(lib);
    const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'check-structure.js')], {
      env: { ...process.env, CHECK_STRUCTURE_LIB: lib, ...(rules ? { CHECK_STRUCTURE_RULES: rules } : {}) },
      encoding: 'utf8',
    });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(lib, { recursive: true, force: true });
  }
}

describe('scripts/check-structure.js', () => {
  it('passes on the library as it is', () => {
    expect(check()).toMatchObject({ status: 0 });
  });

  it("fails on a waiter's phase or fence assigned outside redis.waiter.ts", () => {
    const result = check((lib) => {
      const file = path.join(lib, WAITERS);
      writeFileSync(
        file,
        readFileSync(file, 'utf8').replace(
          '    waiter.lead();\n',
          "    waiter.lead();\n    waiter.phase = 'queued';\n    waiter.fence += 1;\n",
        ),
      );
    }, 'imports');
    expect(result.status).toBe(1);
    expect(result.output).toContain(`waiter state assigned outside providers/redis/waiting/redis.waiter.ts: ${WAITERS}`);
    expect(result.output).toMatch(/waiter\.phase = 'queued'/);
    expect(result.output).toMatch(/waiter\.fence \+= 1/);
  });

  it('fails on a new host interface in the Redis provider', () => {
    const result = check(
      (lib) => appendFileSync(path.join(lib, WAITERS), '\nexport interface GrantHost {\n  granted(token: string): void;\n}\n'),
      'imports',
    );
    expect(result.status).toBe(1);
    expect(result.output).toContain(`new host interface GrantHost in ${WAITERS}`);
  });

  it('fails on an import cycle', () => {
    const result = check(
      (lib) =>
        appendFileSync(
          path.join(lib, 'providers/redis/protocol/queue.floor.ts'),
          "\nexport type { RedisBackend } from '../redis.backend';\n",
        ),
      'imports',
    );
    expect(result.status).toBe(1);
    expect(result.output).toContain('import cycle');
  });

  it('fails on a source file named off <thing>.<role>.ts, in any folder (none is excepted)', () => {
    const result = check((lib) => {
      writeFileSync(path.join(lib, 'key/key-helpers.ts'), 'export const x = 1;\n');
      writeFileSync(path.join(lib, 'providers/redis/protocol/scripts.ts'), 'export const y = 1;\n');
    }, 'imports');
    expect(result.status).toBe(1);
    expect(result.output).toContain('file name off the <thing>.<role>.ts rule: key/key-helpers.ts');
    expect(result.output).toContain('file name off the <thing>.<role>.ts rule: providers/redis/protocol/scripts.ts');
  });
});
