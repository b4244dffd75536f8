import { LockLostError, MysqlLockProvider, type Lock } from 'nestjs-serialized';
import { sleep } from '../support/timing';
import { MysqlInspector, uniquePrefix } from './support/mysql-inspect';
import { ThrowawayMariadb } from './support/throwaway-mariadb';

/** How long a step may take before the test reports which one never happened (an outcome bound, not a speed check). */
const STEP_BOUND_MS = 20_000;

/** Resolves with why `lock.signal` aborted; rejects naming `what` if it never does within the bound. */
function abortOf(lock: Lock, what: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: lock.signal never aborted`)), STEP_BOUND_MS);
    const done = (): void => {
      clearTimeout(timer);
      resolve(lock.signal.reason);
    };
    if (lock.signal.aborted) return done();
    lock.signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * A holder's named lock on a server that crashes (SIGKILL) and comes back: a session
 * lost to a server restart aborts the holder's signal (docs/providers/mysql.md). The server
 * is a throwaway MariaDB of this test, never the shared one on 3306.
 */
describe('MysqlLockProvider when the server is killed and restarted', () => {
  let server: ThrowawayMariadb;
  const providers: MysqlLockProvider[] = [];
  const make = (keyPrefix: string): MysqlLockProvider => {
    const made = new MysqlLockProvider({ url: server.url, keyPrefix, lockPoolSize: 2, connectTimeoutMs: 2000 });
    providers.push(made);
    return made;
  };

  beforeAll(async () => {
    server = await ThrowawayMariadb.create();
    await server.start();
  }, 120_000);
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await server?.remove();
  });

  it("aborts the holder's signal, lets nobody in beside it, and grants the key again afterwards with larger fencing tokens", async () => {
    const keyPrefix = uniquePrefix('restart');
    const holder = make(keyPrefix);
    const rival = make(keyPrefix);
    const lock = await holder.acquire('k');
    const told = abortOf(lock, 'the holder of a lock on a killed server');

    // The rival keeps asking for the key (waiting in the server, then failing closed while it is down)
    // and notes, at each grant, whether the holder had been told by then.
    const grants: { lock: Lock; holderTold: boolean }[] = [];
    const failures: string[] = [];
    let stop = false;
    const contending = (async () => {
      while (!stop && grants.length === 0) {
        try {
          const taken = await rival.acquire('k', { waitTimeoutMs: 3000 });
          grants.push({ lock: taken, holderTold: lock.signal.aborted });
        } catch (error) {
          failures.push((error as Error).name);
          await sleep(100);
        }
      }
    })();

    // The rival's session waits in the server for the holder's lock before the crash.
    const db = await MysqlInspector.connect(server.url);
    try {
      for (const until = Date.now() + STEP_BOUND_MS; (await db.waitingFor(holder.lockNameOf('k'))) < 1;) {
        if (Date.now() > until) throw new Error('the rival never waited in the server');
        await sleep(20);
      }
    } finally {
      await db.close();
    }

    await server.kill();
    const reason = await told;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(lock.lost).toBeInstanceOf(LockLostError);
    // Down: nobody holds the key, nobody is granted it.
    expect(grants).toEqual([]);

    await server.start();
    for (const until = Date.now() + STEP_BOUND_MS * 2; grants.length === 0;) {
      if (Date.now() > until) break;
      await sleep(50);
    }
    stop = true;
    await contending;
    expect(grants).toHaveLength(1);
    const [{ lock: taken, holderTold }] = grants;
    // The holder knew it had lost the key before anyone else got it.
    expect(holderTold).toBe(true);
    // While the server was down the rival failed closed, never with a grant.
    expect(failures.every((name) => name === 'LockBackendError' || name === 'LockTimeoutError')).toBe(true);
    expect(taken.fencingToken > lock.fencingToken).toBe(true);

    // The lost holder's release resolves and leaves the rival's lock alone.
    await lock.release();
    expect(taken.lost).toBeUndefined();
    expect(taken.signal.aborted).toBe(false);
    await taken.release();

    // The provider that lost its session takes the key again on a new one, with a larger token still.
    const again = await holder.acquire('k', { waitTimeoutMs: 10_000 });
    expect(again.fencingToken > taken.fencingToken).toBe(true);
    await again.release();
  }, 180_000);
});
