import { createRequire } from 'node:module';
import { isMissingPackage, missingPeerError } from '../config/optional.peer';

/** What the library uses of `cron`'s `CronTime` (the package @nestjs/schedule schedules with). */
export interface CronTimeLike {
  readonly timeZone?: string;
  readonly utcOffset?: number;
  readonly realDate: boolean;
  readonly source: unknown;
  /** The first fire time after `start`'s whole second, in `timeZone`'s wall clock (a luxon DateTime). */
  getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number };
}

export type CronTimeConstructor = new (source: unknown, timeZone?: string | null, utcOffset?: number | null) => CronTimeLike;

/**
 * `cron`'s `CronTime`, resolved from @nestjs/schedule's own folder: the very
 * package that schedules the method, whatever the app's own `cron` is. Loaded at
 * start-up, only by an app with a `@OncePerTick` cron job.
 */
export function loadCronTime(handler: string): CronTimeConstructor {
  let schedulePath: string;
  try {
    schedulePath = require.resolve('@nestjs/schedule');
  } catch (error) {
    if (isMissingPackage(error, '@nestjs/schedule')) throw missingPeerError(`@OncePerTick on ${handler}`, '@nestjs/schedule');
    throw error;
  }
  return (createRequire(schedulePath)('cron') as { CronTime: CronTimeConstructor }).CronTime;
}
