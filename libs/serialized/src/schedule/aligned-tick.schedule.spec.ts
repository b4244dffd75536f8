import { AlignedTickSchedule } from './aligned-tick.schedule';

describe('AlignedTickSchedule (@Interval / @Timeout ticks)', () => {
  it('names the epoch-aligned period a firing falls in, whatever the timer phase', () => {
    const every500 = new AlignedTickSchedule(500);
    expect(every500.tickAt(1_000_000_000_000)).toBe(1_000_000_000_000);
    expect(every500.tickAt(1_000_000_000_137)).toBe(1_000_000_000_000);
    expect(every500.tickAt(1_000_000_000_499)).toBe(1_000_000_000_000);
    expect(every500.tickAt(1_000_000_000_500)).toBe(1_000_000_000_500);
  });

  it('refuses a period that is not positive', () => {
    expect(() => new AlignedTickSchedule(0)).toThrow(RangeError);
  });
});
