// Owned by the Redis provider work: starts a throwaway Redis Cluster for the cluster suites.
export async function startRedisCluster(): Promise<void> {}
export async function stopRedisCluster(): Promise<void> {}
