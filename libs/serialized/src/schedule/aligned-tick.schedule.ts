import type { TickSchedule } from './tick.schedule';

/**
 * The ticks of `@Interval(ms)` and `@Timeout(ms)`: the multiples of `ms` since the
 * epoch. Each instance's timer runs from its own start, at its own phase; the tick
 * a firing belongs to is the period it falls in, so instances started at different
 * times still agree on it.
 */
export class AlignedTickSchedule implements TickSchedule {
  constructor(readonly periodMs: number) {
    if (!Number.isFinite(periodMs) || periodMs <= 0)
      throw new RangeError(`a period must be a positive number of milliseconds, got ${periodMs}`);
  }

  tickAt(now: number): number {
    return Math.floor(now / this.periodMs) * this.periodMs;
  }
}
