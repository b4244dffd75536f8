import { Floor } from '../protocol/floor';
import type { RedisConnection } from '../transport/redis-connection';
import type { RedisScripts } from '../protocol/redis-scripts';
import { Tenure } from './redis-tenure';
import type { PassOnResult } from '../protocol/hand-off';

const keys = { lock: 'p:{k}', queue: 'p:{k}:q', heartbeats: 'p:{k}:hb', fence: 'p:fence' };

/** A Redis whose release replies the test gives, in any order. */
function fakeRedis() {
  const asked: { served: readonly string[]; keep: number; answer: (result: PassOnResult) => void }[] = [];
  const connection = { run: (_key: string, send: (client: unknown) => Promise<unknown>) => send({}) } as unknown as RedisConnection;
  const scripts = {
    release: {
      run: (_client: unknown, _keys: unknown, _token: string, served: readonly string[], keep: number) =>
        new Promise<PassOnResult>((answer) => asked.push({ served, keep, answer })),
    },
  } as unknown as RedisScripts;
  return { connection, scripts, asked };
}

const kept = (fence: number, last: number, floor: number = Floor.NONE): PassOnResult => ({ status: 'kept', handed: undefined, kept: { fence, px: 1000, last, floor } });
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Tenure refills (the next block of fencing tokens, reserved while riders wait)', () => {
  it('asks once, hands the served places over, and uses the block only above every token issued', async () => {
    const { connection, scripts, asked } = fakeRedis();
    const tenure = new Tenure('k', 's:1000:p2.a', keys, 100n, 102n, Infinity);
    tenure.served.push('s:1000:p2.b');
    const floors: Floor[] = [];
    const forgotten: string[] = [];
    const ask = (): void => tenure.askRefill(connection, scripts, 1000, (f) => floors.push(f), (s) => forgotten.push(...s));
    ask();
    ask();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ served: ['s:1000:p2.b'], keep: 1000 });
    expect(tenure.served).toEqual([]);
    asked[0].answer(kept(200, 202, 150));
    await settle();
    expect(forgotten).toEqual(['s:1000:p2.b']);
    expect(floors).toEqual([150]);
    tenure.issued = 102n;
    expect(tenure.takeRefill()).toMatchObject({ fence: 200n, last: 202n });
    expect(tenure.last).toBe(202n);
    expect(tenure.takeRefill()).toBeUndefined();
  });

  it('drops a refill answered after a release kept the key with a later block (its tokens would go backwards)', async () => {
    const { connection, scripts, asked } = fakeRedis();
    const tenure = new Tenure('k', 's:1000:p2.a', keys, 100n, 102n, Infinity);
    tenure.askRefill(connection, scripts, 1000, () => undefined, () => undefined);
    // The block ran out before the refill came back: the release kept the key with 300..302.
    tenure.kept(302n);
    tenure.issued = 300n;
    asked[0].answer(kept(200, 202));
    await settle();
    expect(tenure.ready).toBeUndefined();
    expect(tenure.takeRefill()).toBeUndefined();
    // A block below the current one is never taken either, however it came.
    tenure.askRefill(connection, scripts, 1000, () => undefined, () => undefined);
    asked[1].answer(kept(250, 252));
    await settle();
    expect(tenure.takeRefill()).toBeUndefined();
  });

  it('asks no more once Redis says the key is not the tenure\'s', async () => {
    const { connection, scripts, asked } = fakeRedis();
    const tenure = new Tenure('k', 's:1000:p2.a', keys, 100n, 102n, Infinity);
    tenure.askRefill(connection, scripts, 1000, () => undefined, () => undefined);
    asked[0].answer({ status: 'none', handed: undefined });
    await settle();
    tenure.askRefill(connection, scripts, 1000, () => undefined, () => undefined);
    expect(asked).toHaveLength(1);
    expect(tenure.takeRefill()).toBeUndefined();
  });
});
