import { Redis } from 'ioredis';
import { LockBackendError, LockLostError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { cli, SENTINEL_MASTER_NAME, SentinelGroup } from '../setup/redis-sentinel';
import { failoverRun } from './support/failover-run';
import { OverlapProbe, sleep, uniqueId, waitFor } from '../support/timing';
import { ownerIn } from './support/lock-value';

/**
 * Sentinel clients, and `replicas: { acks, timeoutMs }` — a grant (with its
 * fencing tokens) counts only once Redis `WAIT` confirms that replicas have it. A
 * group of our own (a master, one replica, three Sentinels on ports 6390-6391 and
 * 26390-26392), started here and stopped after.
 */
describe('Redis through Sentinel, with replica acknowledgements (a master, a replica, three Sentinels)', () => {
  let group: SentinelGroup;
  const clients: Redis[] = [];
  const providers: RedisLockProvider[] = [];

  const sentinelClient = (): Redis => {
    const client = new Redis({ sentinels: group.sentinels, name: SENTINEL_MASTER_NAME, maxRetriesPerRequest: 0, enableOfflineQueue: true });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
  const provider = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const made = new RedisLockProvider({ client: sentinelClient(), keyPrefix: uniqueId('sentinel'), ...options });
    providers.push(made);
    return made;
  };
  const replicaPort = async () => ((await group.masterPort()) === group.dataPorts[0] ? group.dataPorts[1] : group.dataPorts[0]);

  beforeAll(async () => {
    group = await SentinelGroup.start({ basePort: 6390, sentinelBasePort: 26390, replicas: 1 });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(providers.map((p) => p.close()));
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    await group?.stop();
  });

  it("serializes callers of two providers through the app's Sentinel clients, and a grant is on the replica by the time the caller holds it", async () => {
    // Two providers (two sessions): hand-offs between them come by message, within one by reply or in-process.
    const keyPrefix = uniqueId('sentinel');
    const both = [
      provider({ keyPrefix, replicas: { acks: 1, timeoutMs: 500 } }),
      provider({ keyPrefix, replicas: { acks: 1, timeoutMs: 500 } }),
    ];
    const replica = await replicaPort();
    const probe = new OverlapProbe();
    const tokens: bigint[] = [];
    let onReplica = 0;
    await Promise.all(
      Array.from({ length: 4 }, async (_, caller) => {
        const locks = both[caller % 2];
        for (let i = 0; i < 10; i++) {
          const lock = await locks.acquire('account-1');
          // WAIT confirmed it: the replica has this very grant now, not merely soon (its owner token: a holder
          // served by a local hand-off is named with its fencing token only from its first renewal on).
          if (ownerIn((await cli(replica, 'get', locks.redisKeysOf('account-1').lock)).trim()) === (lock as Lock & { token: string }).token)
            onReplica++;
          await probe.run(() => {
            tokens.push(lock.fencingToken);
            return sleep(2);
          });
          await lock.release();
        }
      }),
    );
    expect({ sections: probe.entered, maxInside: probe.maxInside, onReplica }).toEqual({ sections: 40, maxInside: 1, onReplica: 40 });
    expect(tokens.every((token, i) => i === 0 || token > tokens[i - 1])).toBe(true);
  }, 30_000);

  it('fails closed when fewer replicas acknowledge: LockBackendError, and the grant is undone', async () => {
    const locks = provider({ replicas: { acks: 2, timeoutMs: 100 } });
    const started = Date.now();
    await expect(locks.acquire('account-2')).rejects.toBeInstanceOf(LockBackendError);
    await expect(locks.tryAcquire('account-2b')).rejects.toBeInstanceOf(LockBackendError);
    expect(Date.now() - started).toBeLessThan(2000);
    // Nothing of either grant is left behind (the undo is a leave, sent after the caller is told).
    const master = await group.masterPort();
    await waitFor(
      async () => (await cli(master, 'exists', locks.redisKeysOf('account-2').lock, locks.redisKeysOf('account-2b').lock)).trim() === '0',
      3000,
      'the undone grants to go',
    );
    expect(locks.heldLocks).toBe(0);
  }, 30_000);

  it('treats a renewal the replica does not confirm as failed: the holder is told within its lease', async () => {
    // 300 ms: the first grant must be confirmed on a busy host too; renewals (every 400 ms) still fail within the lease.
    const locks = provider({ replicas: { acks: 1, timeoutMs: 300 }, leaseMs: 1200 });
    const lock = await locks.acquire('account-3');
    const replica = await replicaPort();
    const stoppedAt = Date.now();
    group.pause(replica, true);
    try {
      await waitFor(() => lock.signal.aborted, 5000, 'the holder to be told');
    } finally {
      group.pause(replica, false);
    }
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    // Renewals every 400 ms, none confirmed: the lease (1.2 s) ends the lock, not later.
    expect(Date.now() - stoppedAt).toBeLessThan(1200 + 600);
    await lock.release();
  }, 30_000);

  it('SENTINEL FAILOVER under load from 2 processes with replicas: { acks: 1 }: no token handed out twice, no fencing inversion, no overlap, no lost update', async () => {
    const run = await failoverRun(group, { processes: 2, loops: 4, keys: 3, acks: 1, kinds: ['sentinel'], gapMs: 2500, tailMs: 2500 });
    expect({
      tokensTwice: run.tokensTwice,
      claimsRefused: run.claimsRefused,
      overlaps: run.overlaps,
      lostUpdates: run.lostUpdates,
      otherErrors: run.otherErrors,
    }).toEqual({
      tokensTwice: 0,
      claimsRefused: 0,
      overlaps: 0,
      lostUpdates: 0,
      otherErrors: [],
    });
    expect(run.failovers[0].servedAgainAfterMs).toBeDefined();
    expect(run.sections).toBeGreaterThan(100);
  }, 150_000);

  it('control, the same without replicas: the fail-over hands fencing tokens out twice (the hazard the option closes)', async () => {
    const run = await failoverRun(group, { processes: 2, loops: 4, keys: 3, acks: 0, kinds: ['sentinel'], gapMs: 2500, tailMs: 2500 });
    expect(run.otherErrors).toEqual([]);
    // The old master granted and drew tokens until the Sentinels demoted it; the new master never saw them.
    expect(run.tokensTwice + run.claimsRefused).toBeGreaterThan(0);
  }, 150_000);
});
