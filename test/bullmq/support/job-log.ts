/**
 * What the test processors record, in one Redis list per test: RPUSH gives one
 * global order of events across every worker process, so order and overlap are
 * read from it without comparing clocks.
 */
export interface JobEvent {
  /** `start` when the processor body begins, `end` when it succeeds, `fail` when it throws. */
  e: 'start' | 'end' | 'fail';
  key: string;
  seq: number;
  id: string;
  /** `job.attemptsMade` when the event was recorded. */
  attempt: number;
  pid: number;
}

/** Events per key, in log order. */
export function byKey(events: readonly JobEvent[]): Map<string, JobEvent[]> {
  const keys = new Map<string, JobEvent[]>();
  for (const event of events) {
    const list = keys.get(event.key) ?? [];
    list.push(event);
    keys.set(event.key, list);
  }
  return keys;
}

/**
 * Checks that the events of one key never overlap: each `start` is followed by
 * the `end`/`fail` of the same job before the next `start`. Starts listed in
 * `orphans` (a job whose worker was killed) end nothing. Returns the problems found.
 */
export function overlapProblems(events: readonly JobEvent[], orphans: readonly JobEvent[] = []): string[] {
  const problems: string[] = [];
  let running: JobEvent | undefined;
  for (const event of events) {
    if (event.e === 'start') {
      if (running) problems.push(`job ${event.id} (seq ${event.seq}) started while job ${running.id} (seq ${running.seq}) ran`);
      running = isOrphan(event, orphans) ? undefined : event;
    } else {
      if (!running || running.id !== event.id) problems.push(`job ${event.id} ${event.e}ed without having started alone`);
      running = undefined;
    }
  }
  return problems;
}

/** The most processor bodies running at once, over every key. */
export function maxRunning(events: readonly JobEvent[], orphans: readonly JobEvent[] = []): number {
  let running = 0;
  let max = 0;
  for (const event of events) {
    if (event.e === 'start') {
      if (isOrphan(event, orphans)) continue;
      running++;
      max = Math.max(max, running);
    } else running--;
  }
  return max;
}

/** The sequence numbers of the starts of one key, in log order. */
export const startSeqs = (events: readonly JobEvent[]): number[] => events.filter((e) => e.e === 'start').map((e) => e.seq);

/** Data of the jobs the test processor (workers/serialized-worker.ts) runs. */
export interface TestJobData {
  key?: string;
  seq: number;
  durationMs?: number;
  /** The first run of this job (across processes) takes this long instead: the crash tests kill it meanwhile. */
  slowOnceMs?: number;
  /** Attempts that throw before one succeeds. */
  failAttempts?: number;
  /** Throw an `UnrecoverableError` instead of an `Error`. */
  unrecoverable?: boolean;
  /** After starting, keep running until a job of this other key has ended (at most 60 s). */
  waitForEndOf?: string;
  /** After starting, keep running until this many jobs of `barrier.group` have started (at most 60 s). */
  barrier?: { group: string; starts: number };
}

function isOrphan(event: JobEvent, orphans: readonly JobEvent[]): boolean {
  return orphans.some((o) => o.e === event.e && o.id === event.id && o.pid === event.pid && o.attempt === event.attempt);
}
