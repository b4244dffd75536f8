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
  /** The processor's `concurrency` (jobs of one key at once), when it set one. */
  limit?: number;
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

/** One run of a job in the log: while it holds a place of its key (see `placeSpans`). */
export interface PlaceSpan {
  id: string;
  seq: number;
  limit?: number;
  /** Index of its first `start` in the log. */
  from: number;
  /** Index of its last event (`events.length` while it still runs). */
  to: number;
  /** A job run again after it had ended: its completion was lost with its worker, so it queued anew. */
  rerun: boolean;
}

/**
 * The span of each job in the log, from its first `start` to its last event:
 * while it holds a place of its key (a failed attempt that BullMQ retries keeps
 * it, and so does a run killed mid-body until stalled-job recovery re-runs it).
 * A job that ended and then starts again had its worker killed after it left its
 * key and before BullMQ recorded the completion: the re-run takes a new place
 * (enter-job.lua numbers it anew), so it is a second span. Indexes into `events`.
 */
export function placeSpans(events: readonly JobEvent[]): PlaceSpan[] {
  const all: PlaceSpan[] = [];
  const current = new Map<string, { span: PlaceSpan; ended: boolean }>();
  events.forEach((event, index) => {
    const open = current.get(event.id);
    if (event.e === 'start' && (!open || open.ended)) {
      const span = { id: event.id, seq: event.seq, limit: event.limit, from: index, to: events.length, rerun: open !== undefined };
      all.push(span);
      current.set(event.id, { span, ended: false });
    } else if (open) {
      open.span.to = event.e === 'start' ? events.length : index;
      open.ended = event.e === 'end';
    }
  });
  return all;
}

/** The most jobs of the log holding a place at once (see `placeSpans`). */
export function maxPlaces(events: readonly JobEvent[]): number {
  const spans = placeSpans(events);
  return Math.max(0, ...spans.map((span) => spans.filter((other) => other.from <= span.from && span.from < other.to).length));
}

/**
 * Checks "at most `n` jobs of one key at once, let in in enqueue order" on the
 * events of one key (jobs enqueued in `seq` order): when a job first starts, the
 * places held by others plus the earlier jobs that have not started yet (they
 * were let in before it, their bodies just began later) leave room for it.
 * So a job may start before an earlier one only when both were let in together.
 */
export function grantProblems(events: readonly JobEvent[], n: number): string[] {
  const spans = placeSpans(events);
  const problems: string[] = [];
  for (const span of spans) {
    const holding = spans.filter((other) => other !== span && other.from < span.from && span.from < other.to);
    // A re-run queued anew when it started again: it was not let in before this one.
    const earlierNotStarted = spans.filter((other) => !other.rerun && other.seq < span.seq && other.from > span.from);
    if (holding.length + earlierNotStarted.length > n - 1) {
      problems.push(
        `job ${span.seq} started while ${holding.map((o) => o.seq).join(',') || 'none'} held places and ${earlierNotStarted.map((o) => o.seq).join(',') || 'none'} (earlier) had not started`,
      );
    }
  }
  return problems;
}

/**
 * Checks the rule for jobs of one key with different limits (`limit` of each
 * event): whenever a job starts, the jobs holding a place, itself included, are
 * no more than the smallest limit among them.
 */
export function limitProblems(events: readonly JobEvent[]): string[] {
  const spans = placeSpans(events);
  const problems: string[] = [];
  events.forEach((event, index) => {
    if (event.e !== 'start') return;
    const holding = spans.filter((span) => span.from <= index && index < span.to);
    const smallest = Math.min(...holding.map((span) => span.limit ?? 1));
    if (holding.length > smallest)
      problems.push(
        `job ${event.seq} started with ${holding.length} places held (${holding.map((s) => `${s.seq}/${s.limit ?? 1}`).join(' ')})`,
      );
  });
  return problems;
}

function isOrphan(event: JobEvent, orphans: readonly JobEvent[]): boolean {
  return orphans.some((o) => o.e === event.e && o.id === event.id && o.pid === event.pid && o.attempt === event.attempt);
}

/** The log as one line (`s3@1234` = job 3 started in process 1234), for a failure message. */
export const compactLog = (events: readonly JobEvent[]): string => events.map((e) => `${e.e[0]}${e.seq}@${e.pid}`).join(' ');
