import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { Serialized } from 'nestjs-serialized';
import type { ReportJobData, ReportResult } from './report-job.interface';
import type { ResolvedReportsOptions } from './reports-options.interface';
import { REPORTS_OPTIONS, REPORTS_QUEUE } from './reports.constants';

/**
 * Builds reports one at a time per user, in the order they were requested,
 * while reports of different users are built side by side. A report waiting
 * for its user's earlier ones is parked by the library, not held in a slot.
 */
@Processor(REPORTS_QUEUE)
export class ReportsProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(@Inject(REPORTS_OPTIONS) private readonly options: ResolvedReportsOptions) {
    super();
  }

  onApplicationBootstrap(): void {
    // @Processor's options are fixed at class definition; the configured value comes from the module.
    this.worker.concurrency = this.options.concurrency;
  }

  @Serialized('data.userId')
  async process(job: Job<ReportJobData, ReportResult>): Promise<ReportResult> {
    const startedAt = Date.now();
    // Stands for the real work (reading a user's history, rendering a PDF...): seconds, not milliseconds.
    await sleep(this.options.durationMs);
    return { userId: job.data.userId, startedAt, finishedAt: Date.now(), pid: process.pid };
  }
}
