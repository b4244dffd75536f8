import { Cluster, Redis } from 'ioredis';
import { RedisLockProvider, type LockProvider } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import { leftoverKeys } from '../redis/support/leftover-keys';
import { describeLockProviderContract } from './lock-provider.contract';

/** Deletes the fencing counters a suite's providers left (they never expire by design). */
async function dropCounters(client: Redis, prefixes: Iterable<string>): Promise<void> {
  for (const prefix of prefixes) {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:fence*`, 'COUNT', 1000);
      // One by one: on a Cluster node, keys of different slots cannot share a DEL.
      for (const key of keys) await client.del(key);
      cursor = next;
    } while (cursor !== '0');
  }
}

function local(provider: RedisLockProvider): number {
  // Also in-process state: no waiting key may be left behind.
  return provider.waitingKeys;
}

// Standalone, through a URL: the provider opens and closes its own connections.
const standalonePrefixes = new Map<RedisLockProvider, string>();
let standaloneInspector: Redis | undefined;

describeLockProviderContract({
  name: 'redis (standalone)',
  create: async (options) => {
    const keyPrefix = uniqueId('contract');
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix, ...options });
    standalonePrefixes.set(provider, keyPrefix);
    return provider;
  },
  // Same prefix, its own two connections: a second app instance.
  createPeer: async (provider, options) => {
    const keyPrefix = standalonePrefixes.get(provider as RedisLockProvider)!;
    const peer = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix, ...options });
    standalonePrefixes.set(peer, keyPrefix);
    return peer;
  },
  watchesHeldLocks: true,
  grantsNow: false,
  holdsTogether: true,
  leftovers: async (provider: LockProvider) => {
    const redis = provider as RedisLockProvider;
    standaloneInspector ??= new Redis(TEST_REDIS_URL);
    const keys = await leftoverKeys(standaloneInspector, redis, standalonePrefixes.get(redis)!);
    return keys.length + local(redis);
  },
  afterAll: async () => {
    standaloneInspector ??= new Redis(TEST_REDIS_URL);
    await dropCounters(standaloneInspector, standalonePrefixes.values());
    await standaloneInspector.quit();
  },
});

// Cluster, through a client the app passes in: the provider must leave it open.
function clusterNodes(): { host: string; port: number }[] {
  const nodes = process.env.TEST_REDIS_CLUSTER_NODES;
  if (!nodes)
    throw new Error('TEST_REDIS_CLUSTER_NODES is not set: the jest global set-up starts the test cluster (test/setup/redis-cluster.ts)');
  return nodes.split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host, port: Number(port) };
  });
}

const clusterPrefixes = new Map<RedisLockProvider, string>();
const clusterClients: Cluster[] = [];
// A node connection ioredis drops is destroyed after this if it has not closed, not
// after its default 2 s, whose timer would keep jest's worker alive past the file.
const CLUSTER_OPTIONS = { redisOptions: { disconnectTimeout: 200 } };

describeLockProviderContract({
  name: 'redis (cluster)',
  create: async (options) => {
    const keyPrefix = uniqueId('contract');
    const client = new Cluster(clusterNodes(), CLUSTER_OPTIONS);
    clusterClients.push(client);
    const provider = new RedisLockProvider({ client, keyPrefix, ...options });
    clusterPrefixes.set(provider, keyPrefix);
    return provider;
  },
  // Same prefix, a Cluster client of its own: a second app instance.
  createPeer: async (provider, options) => {
    const keyPrefix = clusterPrefixes.get(provider as RedisLockProvider)!;
    const client = new Cluster(clusterNodes(), CLUSTER_OPTIONS);
    clusterClients.push(client);
    const peer = new RedisLockProvider({ client, keyPrefix, ...options });
    clusterPrefixes.set(peer, keyPrefix);
    return peer;
  },
  watchesHeldLocks: true,
  grantsNow: false,
  holdsTogether: true,
  leftovers: async (provider: LockProvider) => {
    const redis = provider as RedisLockProvider;
    const cluster = redis.client as Cluster;
    const prefix = clusterPrefixes.get(redis)!;
    const perNode = await Promise.all(cluster.nodes('master').map((node) => leftoverKeys(node, redis, prefix)));
    return perNode.flat().length + local(redis);
  },
  afterAll: async () => {
    // The provider never closes a client it was given: still usable here.
    await Promise.all(clusterClients.map(async (client) => expect(await client.ping()).toBe('PONG')));
    if (clusterClients.length) {
      await Promise.all(clusterClients[0].nodes('master').map((node) => dropCounters(node, clusterPrefixes.values())));
    }
    await Promise.all(clusterClients.map((client) => client.quit()));
  },
});
