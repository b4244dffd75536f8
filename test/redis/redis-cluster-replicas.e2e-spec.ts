import { Cluster, Redis } from 'ioredis';
import { LockBackendError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { ReplicatedShardCluster } from '../setup/redis-cluster-replicas';
import { cli } from '../setup/redis-sentinel';
import { OverlapProbe, sleep, uniqueId } from '../support/timing';
import { ownerIn } from './support/lock-value';

/**
 * Replica acknowledgements (docs/providers/redis.md) on a Cluster: replica acknowledgements apply per shard — `WAIT` goes to
 * the master that holds the key's slot, on the connection the grant went out on, and
 * counts that master's replicas only.
 */
describe('Redis Cluster with replicas: { acks } (WAIT on the shard that holds the key)', () => {
  const clients: Cluster[] = [];
  const providers: RedisLockProvider[] = [];
  const make = (
    nodes: { host: string; port: number }[],
    options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {},
  ): RedisLockProvider => {
    const client = new Cluster(nodes);
    clients.push(client);
    const provider = new RedisLockProvider({ client, keyPrefix: uniqueId('cluster-acks'), ...options });
    providers.push(provider);
    return provider;
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(clients.splice(0).map((c) => c.quit()));
  });

  describe('the shared test cluster (three masters, no replica)', () => {
    const nodes = () =>
      (process.env.TEST_REDIS_CLUSTER_NODES ?? '')
        .split(',')
        .map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) }));

    it('fails every grant closed with acks: 1 (no shard has a replica), on every shard, and leaves no lock behind', async () => {
      const locks = make(nodes(), { replicas: { acks: 1, timeoutMs: 50 } });
      const keys = Array.from({ length: 6 }, (_, i) => `order-${i}`);
      const results = await Promise.allSettled(keys.map((key) => locks.acquire(key)));
      expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).name : 'held'))).toEqual(keys.map(() => 'LockBackendError'));
      await sleep(200);
      const left = await Promise.all(keys.map(async (key) => (await clients[0].exists(locks.redisKeysOf(key).lock)) as number));
      expect(left).toEqual(keys.map(() => 0));
      expect(locks.heldLocks).toBe(0);
    }, 30_000);
  });

  describe('a cluster whose first shard has a replica and whose second has none', () => {
    let cluster: ReplicatedShardCluster;
    beforeAll(async () => {
      cluster = await ReplicatedShardCluster.start(7391);
    }, 60_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    /** Keys of this provider whose lock lives on shard A (slots 0-8191), or on shard B. */
    const keysOn = async (locks: RedisLockProvider, shard: 'A' | 'B', count: number): Promise<string[]> => {
      const found: string[] = [];
      for (let i = 0; found.length < count; i++) {
        const slot = Number((await cli(cluster.ports[0], 'cluster', 'keyslot', locks.redisKeysOf(`item-${i}`).lock)).trim());
        if (slot < 8192 === (shard === 'A')) found.push(`item-${i}`);
      }
      return found;
    };

    it('grants keys of the replicated shard (on its replica by the time the caller holds them) and fails the others closed', async () => {
      // A busy host can hold a replica's acknowledgement past 200 ms (one CI run saw it): 2 s for the
      // grants that must pass; the shard without a replica is refused after the same wait.
      const locks = make(cluster.nodes, { replicas: { acks: 1, timeoutMs: 2000 } });
      const [onA, onB] = [await keysOn(locks, 'A', 3), await keysOn(locks, 'B', 3)];
      const probe = new OverlapProbe();
      let onReplica = 0;
      // A Cluster replica serves reads only to a connection that asked for READONLY.
      const replica = new Redis(cluster.ports[2], '127.0.0.1');
      await replica.readonly();
      await Promise.all(
        [...onA, ...onA].map(async (key) => {
          const lock = await locks.acquire(key);
          // The owner token: a holder served by a local hand-off is named with its fencing token only from its first renewal on.
          if (ownerIn(await replica.get(locks.redisKeysOf(key).lock)) === (lock as Lock & { token: string }).token) onReplica++;
          await probe.run(() => sleep(2));
          await lock.release();
        }),
      );
      await replica.quit();
      expect({ sections: probe.entered, onReplica }).toEqual({ sections: 6, onReplica: 6 });
      const refused = await Promise.allSettled(onB.map((key) => locks.acquire(key)));
      expect(refused.every((r) => r.status === 'rejected' && r.reason instanceof LockBackendError)).toBe(true);
    }, 30_000);

    it('without the option, grants keys of either shard as before', async () => {
      const locks = make(cluster.nodes);
      const keys = [...(await keysOn(locks, 'A', 2)), ...(await keysOn(locks, 'B', 2))];
      for (const key of keys) await (await locks.acquire(key)).release();
      expect(locks.heldLocks).toBe(0);
    }, 30_000);
  });
});
