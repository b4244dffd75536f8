import { Injectable } from '@nestjs/common';

/** One digest sent by this instance. */
export interface DigestRun {
  /** `once-per-tick` (the `@OncePerTick` job) or `naive` (its unguarded twin). */
  job: 'once-per-tick' | 'naive';
  /** When it was sent (this instance's clock, ms since the epoch). */
  at: number;
}

/** What this instance sent, so the demo can compare instances (a real app would send mail). */
@Injectable()
export class DigestLog {
  private readonly runs: DigestRun[] = [];

  record(job: DigestRun['job']): void {
    this.runs.push({ job, at: Date.now() });
  }

  list(): readonly DigestRun[] {
    return this.runs;
  }
}
