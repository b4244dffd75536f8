import { LockService, PostgresLockProvider, type PostgresLockProviderOptions } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { PgInspector, uniquePrefix } from './support/pg-inspect';

/**
 * Fencing tokens taken from a session's block without a new `nextval` (the sequence
 * is only read): they must still grow strictly per key across sessions, whatever
 * other sessions drew in between.
 */
describe('PostgreSQL fencing tokens from a session block', () => {
  let pg: PgInspector;
  const open: PostgresLockProvider[] = [];
  const sequences: string[] = [];

  const freshSequence = (): string => {
    const name = `nsz_blocks_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    sequences.push(name);
    return name;
  };
  const make = (options: PostgresLockProviderOptions): PostgresLockProvider => {
    const provider = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, lockPoolSize: 1, ...options });
    open.push(provider);
    return provider;
  };
  const lastValue = async (sequence: string): Promise<string | null> =>
    (await pg.query<{ v: string | null }>(`SELECT last_value::text AS v FROM pg_sequences WHERE sequencename = $1`, [sequence]))[0].v;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((p) => p.close()));
    for (const name of sequences.splice(0)) await pg.query(`DROP SEQUENCE IF EXISTS ${name}`);
  });
  afterAll(async () => {
    await pg.close();
  });

  it('one draw serves the uncontended acquisitions of a session while nobody else draws', async () => {
    const sequence = freshSequence();
    const provider = make({ keyPrefix: uniquePrefix('blocks-one'), fencingSequence: sequence });
    const tokens: bigint[] = [];
    for (let i = 0; i < 40; i++) {
      const lock = await provider.acquire(`key-${i}`);
      tokens.push(lock.fencingToken);
      await lock.release();
    }
    expect(tokens).toEqual(Array.from({ length: 40 }, (_, i) => BigInt(i + 1)));
    expect(await lastValue(sequence)).toBe('1');
  });

  it('a session whose block another session drew past draws again: a key never gets a smaller token', async () => {
    const sequence = freshSequence();
    const keyPrefix = uniquePrefix('blocks-two');
    const a = make({ keyPrefix, fencingSequence: sequence, applicationName: `${keyPrefix}:a` });
    const b = make({ keyPrefix, fencingSequence: sequence, applicationName: `${keyPrefix}:b` });
    const first = await a.acquire('k');
    await first.release();
    const second = await b.acquire('k');
    await second.release();
    // a's block (from token 1) is stale now: its next token must come after b's draw.
    const third = await a.acquire('k');
    await third.release();
    expect([first.fencingToken, second.fencingToken, third.fencingToken]).toEqual([1n, 1025n, 2049n]);
    // b's block is stale too: it draws, and then takes the next tokens of its new block.
    const fourth = await b.acquire('k');
    await fourth.release();
    const fifth = await b.acquire('other');
    await fifth.release();
    expect([fourth.fencingToken, fifth.fencingToken]).toEqual([3073n, 3074n]);
  });

  it('tokens of each key grow strictly in holding order while sessions of two providers interleave keys and hand-offs', async () => {
    const sequence = freshSequence();
    const keyPrefix = uniquePrefix('blocks-mix');
    const services = [
      new LockService(make({ keyPrefix, fencingSequence: sequence, applicationName: `${keyPrefix}:a`, lockPoolSize: 2 })),
      new LockService(make({ keyPrefix, fencingSequence: sequence, applicationName: `${keyPrefix}:b`, lockPoolSize: 2 })),
    ];
    const keys = ['x', 'y', 'z'];
    const held: Record<string, bigint[]> = { x: [], y: [], z: [] };
    let seed = 7;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 15; round++) {
      // A burst of callers on few keys: local hand-offs, server grants on either side, and fresh keys that draw or take tokens.
      const calls = Array.from({ length: 12 }, (_, i) => {
        const service = services[random(2)];
        const key = random(4) === 3 ? `fresh-${round}-${i}` : keys[random(3)];
        return service.run(key, async (lock) => {
          held[key]?.push(lock.fencingToken);
          await new Promise((resolve) => setImmediate(resolve));
        });
      });
      await Promise.all(calls);
    }
    for (const key of keys) {
      expect(held[key].length).toBeGreaterThan(10);
      const descents = held[key].filter((token, i) => i > 0 && token <= held[key][i - 1]);
      expect(descents).toEqual([]);
    }
  }, 60_000);
});
