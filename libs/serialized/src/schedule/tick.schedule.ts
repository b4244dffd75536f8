/**
 * Names the ticks of one schedule. A tick is its scheduled time, in milliseconds
 * since the epoch: every instance computes the same number for the same tick from
 * its own clock, whenever it wakes for it.
 */
export interface TickSchedule {
  /**
   * The latest tick scheduled at or before `now` (this instance's clock). A firing
   * never comes before its tick (cron re-arms a timer that wakes early), so an
   * instance names the tick it woke for; one that wakes late (a blocked event loop)
   * names the latest tick due, never an older one.
   */
  tickAt(now: number): number;
}
