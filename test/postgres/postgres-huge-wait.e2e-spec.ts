import { uniqueId, waitFor } from '../support/timing';
import { PgInspector } from './support/pg-inspect';
import { ProviderSet } from './support/provider-set';

/**
 * A per-call `waitTimeoutMs` may be any non-negative safe integer. PostgreSQL's
 * `lock_timeout` stops at 2^31−1 ms, so the provider clamps it (and waits again
 * should the server's bound ever run out first) instead of failing the call.
 */
describe('PostgresLockProvider with a waitTimeoutMs beyond 2^31−1 ms', () => {
  const providers = new ProviderSet();
  let pg: PgInspector;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(() => providers.closeAll());
  afterAll(() => pg.close());

  it.each([2 ** 31 + 60_000, Number.MAX_SAFE_INTEGER])(
    'waits on a key another instance holds until the signal aborts (waitTimeoutMs %d)',
    async (waitTimeoutMs) => {
      const { a, b } = providers.pair();
      const key = uniqueId('huge');
      const held = await a.acquire(key);
      const signal = AbortSignal.timeout(200);
      // Failed before: LockBackendError at once, "invalid value for parameter lock_timeout".
      const error = await b.acquire(key, { waitTimeoutMs, signal }).catch((e: unknown) => e);
      expect(error).toBe(signal.reason);
      expect((error as Error).name).toBe('TimeoutError');
      await held.release();
      // The aborted wait left nothing behind in the server.
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName)) === 0, 10_000, "no advisory lock of B's left");
    },
  );

  it.each([2 ** 31 + 60_000, Number.MAX_SAFE_INTEGER])('grants a free key (waitTimeoutMs %d)', async (waitTimeoutMs) => {
    const { b } = providers.pair();
    const lock = await b.acquire(uniqueId('free'), { waitTimeoutMs });
    expect(lock.signal.aborted).toBe(false);
    expect(await pg.advisoryLocks(b.applicationName, true)).toBe(1);
    await lock.release();
  });
});
