/** What a producer puts in the queue: who asked, and when. */
export interface ReportJobData {
  userId: string;
  requestedAt: string;
}

/** What the processor returns once a report is built (BullMQ keeps it as the job's result). */
export interface ReportResult {
  userId: string;
  /** Epoch ms when the processor started and finished building the report. */
  startedAt: number;
  finishedAt: number;
  /** Process that built it (several worker instances may share the queue). */
  pid: number;
}

/** `GET /jobs/:id`. `state` is BullMQ's: a report waiting for its user's earlier ones shows as `delayed`. */
export interface JobView {
  id: string;
  name: string;
  state: string;
  data: ReportJobData;
  result: ReportResult | null;
  failedReason: string | null;
  attemptsMade: number;
  enqueuedAt: number;
  finishedAt: number | null;
}
