import { LockService, LockBusyError } from 'nestjs-serialized';
import { uniqueId } from '../support/timing';
import { PgInspector } from './support/pg-inspect';
import { ProviderSet } from './support/provider-set';

/**
 * `tryAcquire` when the key is held by *another provider instance* (another
 * app instance): PostgreSQL refuses the try, and the answer is `null`, never
 * an exception (which HTTP turned into a 500).
 */
describe('PostgresLockProvider.tryAcquire against another instance', () => {
  const providers = new ProviderSet();
  let pg: PgInspector;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(() => providers.closeAll());
  afterAll(() => pg.close());

  it('resolves null (does not reject with null) while another instance holds the key, and leaves nothing held', async () => {
    const { a, b } = providers.pair();
    const key = uniqueId('try');
    const held = await a.acquire(key);
    // Failed before: rejected with null.
    const outcome = await b.tryAcquire(key).then(
      (value) => ({ resolved: value }),
      (error: unknown) => ({ rejected: error }),
    );
    expect(outcome).toEqual({ resolved: null });
    expect(await pg.advisoryLocks(b.applicationName)).toBe(0);
    expect(b.activeKeys).toBe(0);
    // The key is free for B's next try as soon as A lets go.
    await held.release();
    const taken = await b.tryAcquire(key);
    expect(taken).not.toBeNull();
    await taken!.release();
  });

  it("gives LockService.run(..., { mode: 'reject' }) a LockBusyError, and the section never runs", async () => {
    const { a, b } = providers.pair();
    const key = uniqueId('reject');
    const held = await a.acquire(key);
    let ran = false;
    const error = await new LockService(b).run(key, () => void (ran = true), { mode: 'reject' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBusyError);
    expect(ran).toBe(false);
    await held.release();
  });
});
