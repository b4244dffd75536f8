import { performance } from 'node:perf_hooks';

let readAt = -1;

function forget(): void {
  readAt = -1;
}

/**
 * `performance.now()` as read first in the current turn of the event loop: every
 * later read in the same turn returns it again. Reading the clock costs about as
 * much as an uncontended in-memory acquisition (bench row 1); one read per turn
 * does not. The answer is early by at most how long the turn has run so far: good
 * enough for telling how long a key has been held (`LockService.inspect`), not
 * for timing work.
 */
export function turnNow(): number {
  if (readAt < 0) {
    readAt = performance.now();
    setImmediate(forget);
  }
  return readAt;
}
