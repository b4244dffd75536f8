import { execFile } from 'node:child_process';
import path from 'node:path';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import { childEntry } from '../support/child-entry';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Runs test/postgres/workers/close.script.ts as a plain script: stdout piped and no
 * IPC channel, so that nothing but the provider's own handles keeps it alive.
 */
function runScript(
  mode: 'close' | 'idle',
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      childEntry('test/postgres/workers/close.script.ts').args,
      {
        cwd: ROOT,
        env: {
          ...process.env,
          ...childEntry('test/postgres/workers/close.script.ts').env,
          DATABASE_URL: TEST_DATABASE_URL,
          KEY_PREFIX: uniqueId('close'),
          MODE: mode,
        },
        // Far beyond start-up plus close; a process kept alive by an idle session would hit it.
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, signal: (error as { signal?: NodeJS.Signals } | null)?.signal ?? null, stdout, stderr });
      },
    );
  });
}

describe('PostgresLockProvider outside Nest: a script may end with `await provider.close()`', () => {
  it("keeps the process alive until close() has finished (the idle sessions' sockets do not)", async () => {
    const result = await runScript('close');
    expect(result.stderr).not.toContain('failed:');
    expect(result.stdout).toContain('closed');
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  }, 90_000);

  it('still lets a process with an idle provider (never closed) exit on its own', async () => {
    const result = await runScript('idle');
    expect(result.stdout).toContain('idle');
    // Not killed by the timeout: nothing of the provider kept it alive.
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  }, 90_000);
});
