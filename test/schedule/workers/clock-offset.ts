/**
 * Shifts this process's wall clock by `CLOCK_OFFSET_MS` (test-only; imported first
 * by the tick worker, before cron, luxon or the library load). `Date.now()` is what
 * cron schedules by and what the library computes a tick's identity from, so the
 * whole process then behaves as an instance whose clock runs that far ahead (or
 * behind). Timers (monotonic) and the backend's clock are untouched.
 */
const offset = Number(process.env.CLOCK_OFFSET_MS ?? 0);
if (offset) {
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + offset;
}

export const CLOCK_OFFSET_MS = offset;
