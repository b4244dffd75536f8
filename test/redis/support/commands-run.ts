import type { Redis } from 'ioredis';

/** Commands Redis ran since the last `CONFIG RESETSTAT`, scripts' own commands included (INFO commandstats). */
export async function commandsRun(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    // The test's own questions are not the provider's.
    if (!['info', 'config', 'ping', 'client', 'hello', 'select'].includes(match[1])) total += Number(match[2]);
  }
  return total;
}
