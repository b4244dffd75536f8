import { performance } from 'node:perf_hooks';
import { turnNow } from './turn.clock';

describe('turnNow', () => {
  it('reads the clock once per turn of the event loop', async () => {
    const first = turnNow();
    const until = performance.now() + 5;
    while (performance.now() < until) {
      // The same turn: the clock moves, the answer does not.
    }
    expect(turnNow()).toBe(first);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(turnNow()).toBeGreaterThanOrEqual(first + 5);
  });
});
