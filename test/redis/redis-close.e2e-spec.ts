import { execFile } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import { childEntry } from '../support/child-entry';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Runs test/redis/workers/close.script.ts as a plain script: stdout piped and no
 * IPC channel, so that nothing but the provider's own handles keeps it alive.
 */
function runScript(keyPrefix: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      childEntry('test/redis/workers/close.script.ts').args,
      {
        cwd: ROOT,
        env: { ...process.env, ...childEntry('test/redis/workers/close.script.ts').env, REDIS_URL: TEST_REDIS_URL, KEY_PREFIX: keyPrefix },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, signal: (error as { signal?: NodeJS.Signals } | null)?.signal ?? null, stdout, stderr });
      },
    );
  });
}

describe('RedisLockProvider outside Nest: a script may end with `await provider.close()`', () => {
  it('keeps the process alive until close() has finished, then exits', async () => {
    const keyPrefix = uniqueId('close');
    const result = await runScript(keyPrefix);
    expect(result.stderr).not.toContain('failed:');
    expect(result.stdout).toContain('closed');
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const keys = await redis.keys(`${keyPrefix}:*`);
      // Only the fencing counter outlives the locks (deleted here).
      expect(keys).toEqual([`${keyPrefix}:fence`]);
      await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  }, 90_000);
});

describe('RedisLockProvider.close() when Redis was never reachable', () => {
  it('closes at once and leaves no timer behind that keeps the process alive', async () => {
    const { RedisLockProvider } = await import('nestjs-serialized');
    const { freeLocalPort } = await import('../support/local-server');
    const { sleep } = await import('../support/timing');
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const provider = new RedisLockProvider({
      url: `redis://127.0.0.1:${await freeLocalPort()}`,
      keyPrefix: uniqueId('dead'),
      connectTimeoutMs: 300,
    });
    await expect(provider.acquire('k')).rejects.toMatchObject({ name: 'LockBackendError' });
    // Between two reconnection attempts there is no socket: nothing to wait for (it waited 2 s for an 'end' that never came).
    const closed = await Promise.race([provider.close().then(() => 'closed'), sleep(1500).then(() => 'still closing after 1.5 s')]);
    expect(closed).toBe('closed');
    // ioredis's own 2 s "destroy the socket" timer kept the process alive after close (jest: "did not exit").
    await sleep(300);
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
