import { performance } from 'node:perf_hooks';
import { EventLoopLagClock } from './event-loop-lag.clock';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const block = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the event loop does not turn
  }
};

describe('EventLoopLagClock', () => {
  it('stands still while the event loop is blocked, and counts the stall it measured', async () => {
    const clock = new EventLoopLagClock();
    const before = clock.now();
    await sleep(50);
    block(600);
    // Read before the ticker had a chance to run: the stall in progress already counts.
    const during = clock.now();
    expect(during - before).toBeLessThan(600);
    await sleep(30);
    expect(clock.stalledMs).toBeGreaterThan(400);
    // Monotonic: the ticker taking the stall into account does not move the clock back.
    expect(clock.now()).toBeGreaterThanOrEqual(during);
    clock.stop();
  });

  it('moves while the loop turns, never ahead of performance.now()', async () => {
    const clock = new EventLoopLagClock();
    // The wall clock's interval encloses the lag clock's (read inside it), whatever the host's speed.
    const wall = performance.now();
    const live = clock.now();
    await sleep(200);
    // It never runs ahead of the wall clock, and it moves while the loop turns.
    const liveElapsed = clock.now() - live;
    const wallElapsed = performance.now() - wall;
    expect(liveElapsed).toBeGreaterThan(0);
    expect(liveElapsed).toBeLessThanOrEqual(wallElapsed + 0.001);
    clock.stop();
  });
});
