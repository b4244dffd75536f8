import { startRedisCluster } from './redis-cluster';
import { checkServices } from './services-check';

export default async function globalSetup(): Promise<void> {
  await checkServices();
  await startRedisCluster();
}
