import type { CronTimeConstructor, CronTimeLike } from './cron.loader';
import type { TickSchedule } from './tick.schedule';

/** Farther back than any cron expression's gap (`cron` looks 8 years ahead at most). */
const MAX_LOOKBACK_MS = 9 * 366 * 86_400_000;

/**
 * The ticks of `@Cron(cronTime, { timeZone, utcOffset })`: its fire times, computed
 * by the same `cron` package that fires them, in the same time zone. A `Date` (or
 * luxon `DateTime`) cron time has one tick, that instant.
 */
export class CronTickSchedule implements TickSchedule {
  private readonly time: CronTimeLike;
  /** The zone `cron` matches the expression's fields in (as `CronTime#sendAt` does). */
  private readonly zone: string | undefined;

  constructor(CronTime: CronTimeConstructor, cronTime: unknown, options: { timeZone?: string; utcOffset?: string | number } = {}) {
    const utcOffset = options.utcOffset === undefined || options.utcOffset === null ? undefined : Number(options.utcOffset);
    this.time = new CronTime(cronTime, options.timeZone ?? null, utcOffset ?? null);
    this.zone = utcOffset === undefined ? this.time.timeZone : offsetZone(utcOffset);
  }

  tickAt(now: number): number {
    if (this.time.realDate) return toMillis(this.time.source);
    // Fire times are whole seconds: the latest at or before `now` is the latest at or before its second.
    const second = Math.floor(now / 1000) * 1000;
    // Look back for the first fire time in (second - lookback, second], doubling the
    // window until one is found, then step forward to the last one in it.
    for (let lookback = 1000; lookback <= MAX_LOOKBACK_MS; lookback *= 2) {
      let fire = this.next(second - lookback);
      if (fire > second) continue;
      for (let after = this.next(fire); after <= second; after = this.next(after)) fire = after;
      return fire;
    }
    return second;
  }

  private next(from: number): number {
    return this.time.getNextDateFrom(new Date(from), this.zone).toMillis();
  }
}

/** The zone `cron` builds for a `utcOffset` (minutes): `UTC+hh:mm`. */
function offsetZone(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const hours = Math.trunc(Math.abs(minutes) / 60);
  const rest = Math.abs(minutes) - hours * 60;
  return `UTC${sign}${String(hours).padStart(2, '0')}:${String(rest).padStart(2, '0')}`;
}

function toMillis(source: unknown): number {
  if (source instanceof Date) return source.getTime();
  return (source as { toMillis(): number }).toMillis();
}
