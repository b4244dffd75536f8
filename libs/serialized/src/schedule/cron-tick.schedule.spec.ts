import { loadCronTime } from './cron.loader';
import { CronTickSchedule } from './cron-tick.schedule';

const CronTime = loadCronTime('Spec#job');
const at = (iso: string) => Date.parse(iso);

describe('CronTickSchedule (the tick a cron firing belongs to)', () => {
  it('names the fire time a firing woke for, at the boundary and a few ms after it', () => {
    const everySecond = new CronTickSchedule(CronTime, '* * * * * *', { timeZone: 'UTC' });
    expect(everySecond.tickAt(at('2026-03-01T10:00:05.000Z'))).toBe(at('2026-03-01T10:00:05.000Z'));
    expect(everySecond.tickAt(at('2026-03-01T10:00:05.004Z'))).toBe(at('2026-03-01T10:00:05.000Z'));
    expect(everySecond.tickAt(at('2026-03-01T10:00:05.999Z'))).toBe(at('2026-03-01T10:00:05.000Z'));
  });

  it('names the latest tick due for a late waker, never the older one it was armed for', () => {
    const everyFive = new CronTickSchedule(CronTime, '*/5 * * * * *', { timeZone: 'UTC' });
    // Armed for :05, woke at :17.3 after a blocked event loop: the tick due is :15.
    expect(everyFive.tickAt(at('2026-03-01T10:00:17.300Z'))).toBe(at('2026-03-01T10:00:15.000Z'));
  });

  it('finds a nightly tick hours back, in the cron time zone', () => {
    const nightly = new CronTickSchedule(CronTime, '0 0 3 * * *', { timeZone: 'Europe/Paris' });
    // 03:00 in Paris is 02:00 UTC in winter.
    expect(nightly.tickAt(at('2026-01-15T02:00:00.010Z'))).toBe(at('2026-01-15T02:00:00.000Z'));
    expect(nightly.tickAt(at('2026-01-15T20:00:00.000Z'))).toBe(at('2026-01-15T02:00:00.000Z'));
    expect(nightly.tickAt(at('2026-01-15T01:59:59.000Z'))).toBe(at('2026-01-14T02:00:00.000Z'));
  });

  it('honours utcOffset (minutes) as cron does', () => {
    const nightly = new CronTickSchedule(CronTime, '0 0 3 * * *', { utcOffset: 120 });
    expect(nightly.tickAt(at('2026-07-01T01:00:00.500Z'))).toBe(at('2026-07-01T01:00:00.000Z'));
  });

  it('gives a Date cron time its one tick', () => {
    const once = new CronTickSchedule(CronTime, new Date('2099-01-01T00:00:00Z'));
    expect(once.tickAt(at('2099-01-01T00:00:00.003Z'))).toBe(at('2099-01-01T00:00:00.000Z'));
  });

  it('gives every instance the same tick whatever its clock reads within the period', () => {
    const everySecond = new CronTickSchedule(CronTime, '* * * * * *');
    const ticks = [0, 3, 250, 998].map((ms) => everySecond.tickAt(at('2026-03-01T10:00:07.000Z') + ms));
    expect(new Set(ticks).size).toBe(1);
  });
});
