import type { JobView } from './report-job.interface';

/** What {@link runReportsDemo} observed for one user's burst of reports. */
export interface ReportsDemoResult {
  userId: string;
  /** Job ids in enqueue order. */
  jobIds: string[];
  /** Job ids by the time their processing started / finished. */
  startOrder: string[];
  finishOrder: string[];
  /** Started and finished in enqueue order. */
  inOrder: boolean;
  /** Pairs of this user's reports that were built at the same time (0 when serialized). */
  overlaps: number;
  /** Reports that did not complete (failed, or still pending at the timeout). */
  notCompleted: string[];
  elapsedMs: number;
}

/**
 * Fires `count` report requests for one user at once (a double-click burst) at a
 * running app, polls `GET /jobs/:id` until they are done, and reports the order
 * they ran in and whether any two overlapped.
 */
export async function runReportsDemo(
  baseUrl: string,
  {
    userId = 'demo-user',
    count = 4,
    pollMs = 250,
    timeoutMs = 120_000,
  }: { userId?: string; count?: number; pollMs?: number; timeoutMs?: number } = {},
): Promise<ReportsDemoResult> {
  const started = Date.now();
  const accepted = await Promise.all(
    Array.from({ length: count }, async () => {
      const response = await fetch(`${baseUrl}/users/${encodeURIComponent(userId)}/reports`, { method: 'POST' });
      if (response.status !== 202) throw new Error(`POST reports: expected 202, got ${response.status}`);
      return ((await response.json()) as { jobId: string }).jobId;
    }),
  );
  // BullMQ numbers jobs as they are added: the ids give the enqueue order.
  const jobIds = [...accepted].sort((a, b) => Number(a) - Number(b));

  const views = new Map<string, JobView>();
  while (Date.now() - started < timeoutMs) {
    for (const id of jobIds) {
      const response = await fetch(`${baseUrl}/jobs/${id}`);
      if (response.ok) views.set(id, (await response.json()) as JobView);
    }
    if (jobIds.every((id) => ['completed', 'failed'].includes(views.get(id)?.state ?? ''))) break;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }

  const done = jobIds.filter((id) => views.get(id)?.state === 'completed' && views.get(id)?.result);
  const result = (id: string) => views.get(id)!.result!;
  const startOrder = [...done].sort((a, b) => result(a).startedAt - result(b).startedAt);
  const finishOrder = [...done].sort((a, b) => result(a).finishedAt - result(b).finishedAt);
  let overlaps = 0;
  for (let i = 0; i < done.length; i++) {
    for (let j = i + 1; j < done.length; j++) {
      const [a, b] = [result(done[i]), result(done[j])];
      if (a.startedAt < b.finishedAt && b.startedAt < a.finishedAt) overlaps++;
    }
  }
  const notCompleted = jobIds.filter((id) => !done.includes(id));
  const same = (order: string[]) => order.length === jobIds.length && order.every((id, i) => id === jobIds[i]);
  return {
    userId,
    jobIds,
    startOrder,
    finishOrder,
    inOrder: same(startOrder) && same(finishOrder),
    overlaps,
    notCompleted,
    elapsedMs: Date.now() - started,
  };
}

/** One line per fact, for a demo's output. */
export function formatReportsDemo(r: ReportsDemoResult): string {
  return [
    `${r.jobIds.length} reports for ${r.userId}, enqueued as jobs ${r.jobIds.join(', ')}`,
    `  started in order ${r.startOrder.join(', ')}; finished in order ${r.finishOrder.join(', ')}`,
    `  in enqueue order: ${r.inOrder ? 'yes' : 'NO'}; overlapping pairs: ${r.overlaps}; not completed: ${r.notCompleted.length}; ${r.elapsedMs} ms`,
  ].join('\n');
}
