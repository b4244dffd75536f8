import { Floor } from '../protocol/queue.floor';
import type { PassOnResult } from '../protocol/hand-off.reply';
import { Tenure } from './redis.tenure';

const keys = { lock: 'p:{k}', queue: 'p:{k}:q', heartbeats: 'p:{k}:hb', fence: 'p:fence', holders: 'p:{k}:h', shapes: 'p:{k}:s' };

const kept = (fence: number, last: number, floor: number = Floor.NONE): PassOnResult => ({
  status: 'kept',
  handed: undefined,
  kept: { fence, px: 1000, last, floor },
});

describe('Tenure refills (the next block of fencing tokens, reserved while riders wait)', () => {
  it('asks once, hands the served places over, and uses the block only above every token issued', () => {
    const tenure = new Tenure('k', 's:1000:a', keys, 100n, 102n, Floor.NONE);
    tenure.served.push('s:1000:b');
    const ask = tenure.askRefill()!;
    expect(tenure.askRefill()).toBeUndefined();
    expect(ask.tokens).toEqual(['s:1000:b']);
    expect(tenure.served).toEqual([]);
    expect(tenure.refilled(ask, kept(200, 202, 150), 0)).toBe(150);
    tenure.issued = 102n;
    expect(tenure.takeRefill()).toMatchObject({ fence: 200n, last: 202n });
    expect(tenure.last).toBe(202n);
    expect(tenure.takeRefill()).toBeUndefined();
  });

  it('drops a refill answered after a release kept the key with a later block (its tokens would go backwards)', () => {
    const tenure = new Tenure('k', 's:1000:a', keys, 100n, 102n, Floor.NONE);
    const first = tenure.askRefill()!;
    // The block ran out before the refill came back: the release kept the key with 300..302.
    tenure.kept(302n);
    tenure.issued = 300n;
    expect(tenure.refilled(first, kept(200, 202), 0)).toBeUndefined();
    expect(tenure.ready).toBeUndefined();
    expect(tenure.takeRefill()).toBeUndefined();
    // A block below the current one is never taken either, however it came.
    const second = tenure.askRefill()!;
    tenure.refilled(second, kept(250, 252), 0);
    expect(tenure.takeRefill()).toBeUndefined();
  });

  it("asks no more once Redis says the key is not the tenure's, or the refill failed", () => {
    const tenure = new Tenure('k', 's:1000:a', keys, 100n, 102n, Floor.NONE);
    tenure.refilled(tenure.askRefill()!, { status: 'none', handed: undefined }, 0);
    expect(tenure.askRefill()).toBeUndefined();
    expect(tenure.takeRefill()).toBeUndefined();
    const other = new Tenure('k', 's:1000:a', keys, 100n, 102n, Floor.NONE);
    other.refillFailed(other.askRefill()!);
    expect(other.askRefill()).toBeUndefined();
  });
});
