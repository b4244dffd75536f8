import type { ScheduleMetadata } from '../metadata/schedule-metadata.interface';
import { AlignedTickSchedule } from './aligned-tick.schedule';
import { loadCronTime } from './cron.loader';
import { CronTickSchedule } from './cron-tick.schedule';
import type { TickSchedule } from './tick.schedule';

/** The ticks of the schedule @nestjs/schedule's decorator put on `handler`. */
export function tickScheduleOf(schedule: ScheduleMetadata, handler: string): TickSchedule {
  switch (schedule.kind) {
    case 'cron':
      return new CronTickSchedule(loadCronTime(handler), schedule.cronTime, schedule);
    case 'interval':
    case 'timeout':
      return new AlignedTickSchedule(schedule.ms);
  }
}
