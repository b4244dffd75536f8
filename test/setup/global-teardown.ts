import { stopRedisCluster } from './redis-cluster';

export default async function globalTeardown(): Promise<void> {
  await stopRedisCluster();
}
