/**
 * The schedule @nestjs/schedule's decorators put on a method, as the library reads
 * it: `@Cron(cronTime, { timeZone, utcOffset })`, `@Interval(ms)`, `@Timeout(ms)`.
 */
export type ScheduleMetadata =
  | { readonly kind: 'cron'; readonly cronTime: unknown; readonly timeZone?: string; readonly utcOffset?: string | number }
  | { readonly kind: 'interval'; readonly ms: number }
  | { readonly kind: 'timeout'; readonly ms: number };
