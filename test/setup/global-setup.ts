import { buildForTests, TEST_BUILD_ENV } from './compiled-build';
import { startRedisCluster } from './redis-cluster';
import { checkServices } from './services-check';

export default async function globalSetup(): Promise<void> {
  await checkServices();
  // Test workers inherit the environment: their child processes start from this build.
  process.env[TEST_BUILD_ENV] = buildForTests();
  await startRedisCluster();
}
