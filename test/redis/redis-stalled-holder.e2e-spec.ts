import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * A holder always learns that it lost its lock (issue 21 item 7). A child process
 * takes a key and stalls its event loop past the lease inside its section; another
 * provider instance (this test's) takes the key as soon as the lease runs out.
 * When the child resumes, the loss shows at once — `lock.lost` compares the lease
 * end with the monotonic clock, no timer needed — and a holder that never looks is
 * told by its release: the release resolves (never rejects because the lock was
 * lost), aborts the signal, sets `lost` and logs one warning naming the key.
 */
describe('RedisLockProvider: a holder stalled past its lease is told', () => {
  const LEASE_MS = 800;
  const STALL_MS = 2500;
  let peer: RedisLockProvider;
  let keyPrefix: string;
  const workers: WorkerProcess[] = [];

  beforeEach(() => {
    keyPrefix = uniqueId('stalled-holder');
    peer = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix, leaseMs: LEASE_MS });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await peer.close();
    const redis = new Redis(TEST_REDIS_URL);
    await deleteKeysWithPrefix(redis, keyPrefix);
    redis.disconnect();
  });

  const stallingHolder = async (via: 'service' | 'provider') => {
    const key = 'k';
    const child = WorkerProcess.start(`holder-${via}`, 'test/redis/workers/stalling-holder.worker.ts', {
      REDIS_URL: TEST_REDIS_URL,
      KEY_PREFIX: keyPrefix,
      KEY: key,
      LEASE_MS: String(LEASE_MS),
      STALL_MS: String(STALL_MS),
      VIA: via,
    });
    workers.push(child);
    const holding = await child.waitForType('holding', 60_000);
    // Another instance takes the key once the stalled holder's lease ran out in Redis.
    const taken = await peer.acquire(key, { waitTimeoutMs: STALL_MS * 4 });
    const done = await child.waitForType('done', 60_000);
    await taken.release();
    return { holderToken: BigInt(holding.token as string), peerToken: taken.fencingToken, seen: done.seen as Record<string, unknown>, warnings: done.warnings as string[] };
  };

  it('a section resuming after the stall sees the loss at once (lock.lost, signal), and run() resolves', async () => {
    const { holderToken, peerToken, seen, warnings } = await stallingHolder('service');
    expect(peerToken).toBeGreaterThan(holderToken);
    expect(seen).toEqual({ lostAfterStall: true, abortedAfterStall: true, runResolved: true });
    // One warning for the loss, naming the key (its scope).
    expect(warnings.filter((w) => w.includes('lost'))).toHaveLength(1);
    expect(warnings.join('\n')).toContain('lock "k"');
  }, 60_000);

  it('a holder that never looks is told by its release: resolved, signal aborted, lost set, one warning', async () => {
    const { holderToken, peerToken, seen, warnings } = await stallingHolder('provider');
    expect(peerToken).toBeGreaterThan(holderToken);
    expect(seen).toEqual({ releaseResolved: true, lostAfterRelease: true, abortedAfterRelease: true, reason: 'LockLostError' });
    expect(warnings.filter((w) => w.includes('lost'))).toHaveLength(1);
    expect(warnings.join('\n')).toContain('Lock "k" was lost: the key was no longer its own at release');
  }, 60_000);
});
