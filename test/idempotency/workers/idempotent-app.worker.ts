/**
 * An app instance in its own OS process: the example app plus the idempotency
 * fixtures on Express, driver IDEM_DRIVER with KEY_PREFIX and LEASE_MS.
 * Sends {type:'ready', url}, then {type:'inside', ids} whenever the set of
 * requests held inside a fixture handler changes.
 */
import 'reflect-metadata';
import { startIdempotencyApp, serializedOptions, type Driver } from '../support/idempotency-apps';

async function main(): Promise<void> {
  const driver = process.env.IDEM_DRIVER as Driver;
  const { url, probe } = await startIdempotencyApp(
    'express',
    serializedOptions(driver, process.env.KEY_PREFIX!, { leaseMs: Number(process.env.LEASE_MS ?? 30_000) }),
  );
  process.send?.({ type: 'ready', url });
  let last = '';
  setInterval(() => {
    const ids = [...probe.inside].sort();
    if (ids.join() !== last) process.send?.({ type: 'inside', ids });
    last = ids.join();
  }, 10);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
