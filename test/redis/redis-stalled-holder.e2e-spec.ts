import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * A holder always learns that it lost its lock (docs/semantics.md). A child process
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
    return {
      holderToken: BigInt(holding.token as string),
      peerToken: taken.fencingToken,
      seen: done.seen as Record<string, unknown>,
      warnings: done.warnings as string[],
    };
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

/**
 * A late renewal never hides the loss. After a stall the overdue timers run before
 * the I/O callbacks, so the lease's renewal falls due — and is handled — before the
 * section's code continues on the reply it awaited. A renewal sent once the lease
 * had run out can never keep the key; the section's first read of `lock.lost` must
 * report the loss, with another provider instance holding the key meanwhile.
 */
describe('RedisLockProvider: a holder resuming past its lease while a renewal is due', () => {
  const LEASE_MS = 1000;
  let peer: RedisLockProvider;
  let keyPrefix: string;
  const workers: WorkerProcess[] = [];

  beforeEach(() => {
    keyPrefix = uniqueId('late-renewal');
    peer = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix, leaseMs: LEASE_MS });
  });
  afterEach(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.kill('SIGCONT');
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await peer.close();
    const redis = new Redis(TEST_REDIS_URL);
    await deleteKeysWithPrefix(redis, keyPrefix);
    redis.disconnect();
  });

  const holder = (how: 'blocked' | 'stopped', env: Record<string, string> = {}) => {
    const child = WorkerProcess.start(`late-renewal-${how}`, 'test/redis/workers/late-renewal-holder.worker.ts', {
      REDIS_URL: TEST_REDIS_URL,
      KEY_PREFIX: keyPrefix,
      KEY: 'k',
      LEASE_MS: String(LEASE_MS),
      HOW: how,
      ...env,
    });
    workers.push(child);
    return child;
  };

  const expectToldAtFirstRead = (seen: Record<string, unknown>, peerGrantedAt: number, holderToken: bigint, peerToken: bigint) => {
    // The scenario happened: the other instance held the key before the holder resumed.
    expect(peerToken).toBeGreaterThan(holderToken);
    expect(typeof seen.resumedAt).toBe('number');
    expect(peerGrantedAt).toBeLessThan(seen.resumedAt as number);
    // ...and the holder's first read after resuming reported the loss: no write beside the other holder.
    expect(seen).toEqual({ lostAtFirstRead: true, abortedAtFirstRead: true, resumedAt: seen.resumedAt });
  };

  it('event loop blocked past the lease: the first read after it reports the loss', async () => {
    const child = holder('blocked', { STALL_MS: String(LEASE_MS * 2.5) });
    const holding = await child.waitForType('holding', 60_000);
    const taken = await peer.acquire('k', { waitTimeoutMs: LEASE_MS * 8 });
    const peerGrantedAt = Date.now();
    const done = await child.waitForType('done', 60_000);
    await taken.release();
    expectToldAtFirstRead(done.seen as Record<string, unknown>, peerGrantedAt, BigInt(holding.token as string), taken.fencingToken);
  }, 60_000);

  it('process stopped (SIGSTOP) past the lease, then continued: the first read reports the loss', async () => {
    const child = holder('stopped');
    const holding = await child.waitForType('holding', 60_000);
    // Stopped while its section computes, before its first renewal is due (a third of the lease after the grant).
    await sleep(LEASE_MS / 10);
    child.kill('SIGSTOP');
    const taken = await peer.acquire('k', { waitTimeoutMs: LEASE_MS * 8 });
    const peerGrantedAt = Date.now();
    // Stopped for longer than a lease whenever the stop began.
    await sleep(LEASE_MS);
    child.kill('SIGCONT');

    const done = await child.waitForType('done', 60_000);
    await taken.release();
    expectToldAtFirstRead(done.seen as Record<string, unknown>, peerGrantedAt, BigInt(holding.token as string), taken.fencingToken);
  }, 60_000);
});
