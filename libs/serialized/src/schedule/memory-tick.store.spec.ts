import { MemoryTickStore } from './memory-tick.store';

describe('MemoryTickStore (the claim rules every store follows)', () => {
  let now = 10_000;
  const store = new MemoryTickStore(() => now);
  const claim = (tick: number, owner: string, leaseMs = 1000, maxAheadMs = 1000) =>
    store.claim({ name: 'job', tick, owner, leaseMs, maxAheadMs });

  beforeEach(() => {
    now = 10_000;
  });

  it('claims a tick once: the same tick and earlier ones are already run', async () => {
    expect(await claim(10_000, 'a')).toEqual({ claimed: true, backendNow: 10_000 });
    await store.finish('job', 'a');
    expect(await claim(10_000, 'b')).toMatchObject({ claimed: false, reason: 'already_run' });
    expect(await claim(9_000, 'c')).toMatchObject({ claimed: false, reason: 'already_run' });
  });

  it('skips a later tick while the run is within its lease, and claims it once the run finished or its lease ran out', async () => {
    const other = new MemoryTickStore(() => now);
    expect((await other.claim({ name: 'n', tick: 1000, owner: 'a', leaseMs: 1500, maxAheadMs: 1000 })).claimed).toBe(true);
    now += 1000;
    expect(await other.claim({ name: 'n', tick: 2000, owner: 'b', leaseMs: 1500, maxAheadMs: 1000 })).toMatchObject({
      claimed: false,
      reason: 'overlap',
    });
    // Renewed while running: the lease moves on.
    expect(await other.renew('n', 'a', 1500)).toBe(true);
    now += 1000;
    expect(await other.claim({ name: 'n', tick: 3000, owner: 'c', leaseMs: 1500, maxAheadMs: 1000 })).toMatchObject({
      claimed: false,
      reason: 'overlap',
    });
    // The holder died: no renewal, its lease runs out, the next tick runs.
    now += 1600;
    expect((await other.claim({ name: 'n', tick: 4000, owner: 'd', leaseMs: 1500, maxAheadMs: 1000 })).claimed).toBe(true);
    // The dead run's owner no longer renews or finishes anything.
    expect(await other.renew('n', 'a', 1500)).toBe(false);
    await other.finish('n', 'a');
    expect(await other.claim({ name: 'n', tick: 5000, owner: 'e', leaseMs: 1500, maxAheadMs: 1000 })).toMatchObject({
      claimed: false,
      reason: 'overlap',
    });
  });

  it('refuses a tick more than maxAheadMs ahead of its clock', async () => {
    const other = new MemoryTickStore(() => now);
    expect(await other.claim({ name: 'n', tick: now + 1001, owner: 'a', leaseMs: 100, maxAheadMs: 1000 })).toMatchObject({
      claimed: false,
      reason: 'clock_ahead',
    });
    expect((await other.claim({ name: 'n', tick: now + 1000, owner: 'a', leaseMs: 100, maxAheadMs: 1000 })).claimed).toBe(true);
  });
});
