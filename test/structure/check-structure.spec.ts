import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the check is a plain Node script's module
const { checkStructure } = require('../../scripts/check-structure') as {
  checkStructure(lib?: string, options?: { rules?: 'all' | 'imports' }): { problems: string[]; summary: string };
};

/**
 * The structure check's own rules (scripts/check-structure.js), run on a copy of
 * the library: clean it passes; a waiter's state assigned outside its owner, a new
 * host interface, an import cycle, or a file named off `<thing>.<role>.ts` each
 * fail it, named. The rules run in this process (`checkStructure`), as the script
 * runs them: a node process per case was most of this file's time.
 */
const ROOT = path.join(__dirname, '..', '..');
const LIB = path.join(ROOT, 'libs', 'serialized', 'src');
const WAITERS = 'providers/redis/redis.backend.ts';

/** One copy of the library for the file: each case edits it, and its edits are undone after it. */
let copy: string;
beforeAll(() => {
  copy = mkdtempSync(path.join(tmpdir(), 'check-structure-'));
  cpSync(LIB, copy, { recursive: true });
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

/**
 * Rules 1-4 on the copy with `edits` made (file → its new text, from the old one; '' for a
 * new file), then the edits undone. Rules 5 and 6 have test/structure/state-rules.spec.ts.
 */
function check(edits: Record<string, (text: string) => string>): { status: number; output: string } {
  const before = new Map<string, string | undefined>();
  try {
    for (const [name, edit] of Object.entries(edits)) {
      const file = path.join(copy, name);
      const text = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
      before.set(file, text);
      writeFileSync(file, edit(text ?? ''));
    }
    const { problems, summary } = checkStructure(copy, { rules: 'imports' });
    return { status: problems.length ? 1 : 0, output: problems.length ? problems.join('\n') : summary };
  } finally {
    for (const [file, text] of before) {
      if (text === undefined) rmSync(file);
      else writeFileSync(file, text);
    }
  }
}

describe('scripts/check-structure.js', () => {
  it('passes on the library as it is', () => {
    // The library itself, not a copy: nothing is changed, and a failure lists the problems.
    expect(checkStructure(LIB).problems).toEqual([]);
  });

  it("fails on a waiter's phase or fence assigned outside redis.waiter.ts", () => {
    const result = check({
      [WAITERS]: (text) =>
        text.replace('    waiter.lead();\n', "    waiter.lead();\n    waiter.phase = 'queued';\n    waiter.fence += 1;\n"),
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain(`waiter state assigned outside providers/redis/waiting/redis.waiter.ts: ${WAITERS}`);
    expect(result.output).toMatch(/waiter\.phase = 'queued'/);
    expect(result.output).toMatch(/waiter\.fence \+= 1/);
  });

  it('fails on a new host interface in the Redis provider', () => {
    const result = check({ [WAITERS]: (text) => `${text}\nexport interface GrantHost {\n  granted(token: string): void;\n}\n` });
    expect(result.status).toBe(1);
    expect(result.output).toContain(`new host interface GrantHost in ${WAITERS}`);
  });

  it('fails on an import cycle', () => {
    const result = check({
      'providers/redis/protocol/queue.floor.ts': (text) => `${text}\nexport type { RedisBackend } from '../redis.backend';\n`,
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain('import cycle');
  });

  it('fails on a source file named off <thing>.<role>.ts, in any folder (none is excepted)', () => {
    const result = check({
      'key/key-helpers.ts': () => 'export const x = 1;\n',
      'providers/redis/protocol/scripts.ts': () => 'export const y = 1;\n',
    });
    expect(result.status).toBe(1);
    expect(result.output).toContain('file name off the <thing>.<role>.ts rule: key/key-helpers.ts');
    expect(result.output).toContain('file name off the <thing>.<role>.ts rule: providers/redis/protocol/scripts.ts');
  });

  it('passes on the copy once every case undid its edits', () => {
    expect(check({})).toMatchObject({ status: 0 });
  });
});
