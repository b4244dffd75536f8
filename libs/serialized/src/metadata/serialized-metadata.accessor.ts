import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  ONCE_PER_TICK_METADATA,
  SERIALIZED_LOCK_PARAMETER_METADATA,
  SERIALIZED_OPTIONS_METADATA,
  SKIP_SERIALIZED_METADATA,
} from '../serialized.constants';
import type { OncePerTickMetadata } from './once-per-tick-options.interface';
import type { ScheduleMetadata } from './schedule-metadata.interface';
import type { SerializedMetadata } from './serialized-options.interface';

// @nestjs/schedule's metadata keys and scheduler types (literals: the package is an
// optional peer; its dist/schedule.constants.js and dist/enums/scheduler-type.enum.js).
const SCHEDULER_TYPE = 'SCHEDULER_TYPE';
const SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const SCHEDULE_INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const SCHEDULE_TIMEOUT_OPTIONS = 'SCHEDULE_TIMEOUT_OPTIONS';
const CRON = 1;
const TIMEOUT = 2;
const INTERVAL = 3;

/**
 * Every Reflector read of `@Serialized`, `@SkipSerialized()`, `@SerializedLock()`
 * and `@OncePerTick` goes through here, and so does the library's one read of
 * @nestjs/schedule's metadata.
 */
@Injectable()
export class SerializedMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /**
   * The handler's `@Serialized`, else its class's unless the handler is
   * `@SkipSerialized()`; `undefined` when the call is not serialized.
   */
  get(handler: object, cls: object): SerializedMetadata | undefined {
    const onHandler = this.reflector.get<SerializedMetadata | undefined>(SERIALIZED_OPTIONS_METADATA, handler as never);
    if (onHandler) return onHandler;
    if (this.reflector.get<boolean | undefined>(SKIP_SERIALIZED_METADATA, handler as never) === true) return undefined;
    return this.reflector.get<SerializedMetadata | undefined>(SERIALIZED_OPTIONS_METADATA, cls as never);
  }

  /** Whether a parameter of `handler` is `@SerializedLock()`. */
  takesLock(handler: object): boolean {
    return this.reflector.get<number | undefined>(SERIALIZED_LOCK_PARAMETER_METADATA, handler as never) !== undefined;
  }

  /** The method's `@OncePerTick`, if any. */
  oncePerTick(handler: object): OncePerTickMetadata | undefined {
    return this.reflector.get<OncePerTickMetadata | undefined>(ONCE_PER_TICK_METADATA, handler as never);
  }

  /** The `@Cron`, `@Interval` or `@Timeout` of @nestjs/schedule on the method, if any. */
  scheduleOf(handler: object): ScheduleMetadata | undefined {
    const read = <T>(key: string) => this.reflector.get<T | undefined>(key, handler as never);
    switch (read<number>(SCHEDULER_TYPE)) {
      case CRON: {
        const cron = read<{ cronTime: unknown; timeZone?: string; utcOffset?: string | number }>(SCHEDULE_CRON_OPTIONS);
        return cron && { kind: 'cron', cronTime: cron.cronTime, timeZone: cron.timeZone, utcOffset: cron.utcOffset };
      }
      case INTERVAL: {
        const interval = read<{ timeout: number }>(SCHEDULE_INTERVAL_OPTIONS);
        return interval && { kind: 'interval', ms: interval.timeout };
      }
      case TIMEOUT: {
        const timeout = read<{ timeout: number }>(SCHEDULE_TIMEOUT_OPTIONS);
        return timeout && { kind: 'timeout', ms: timeout.timeout };
      }
      default:
        return undefined;
    }
  }
}
