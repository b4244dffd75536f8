import type { RedisClient } from './redis-connection';

/**
 * Quits politely when connected (pending replies still arrive), otherwise just
 * disconnects; resolves once the connection is gone.
 */
export async function closeClient(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  if (client.status === 'ready') {
    client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)));
  await Promise.race([ended, stuck]);
  clearTimeout(timer);
  if ((client.status as string) !== 'end') client.disconnect();
}
