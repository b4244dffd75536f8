import { Controller, Get, HttpCode, HttpStatus, NotFoundException, Param, Post, Res } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { JobView, ReportJobData, ReportResult } from './report-job.interface';
import { REPORTS_QUEUE } from './reports.constants';

/** What Express's `res` and Fastify's `reply` both offer. */
interface HeaderSetter {
  header(name: string, value: string): unknown;
}

/**
 * A report takes seconds: the request is accepted at once (202) and the client
 * polls `Location`, instead of holding a connection while the user's earlier
 * reports are built.
 */
@Controller()
export class ReportsController {
  constructor(@InjectQueue(REPORTS_QUEUE) private readonly queue: Queue<ReportJobData, ReportResult>) {}

  @Post('users/:userId/reports')
  @HttpCode(HttpStatus.ACCEPTED)
  async requestReport(@Param('userId') userId: string, @Res({ passthrough: true }) res: HeaderSetter): Promise<{ jobId: string }> {
    const job = await this.queue.add('report', { userId, requestedAt: new Date().toISOString() });
    res.header('Location', `/jobs/${job.id}`);
    return { jobId: job.id! };
  }

  @Get('jobs/:id')
  async getJob(@Param('id') id: string): Promise<JobView> {
    // State first, then the job: a job read before its state could show "completed" without its result.
    const state = await this.queue.getJobState(id);
    const job = state === 'unknown' ? undefined : await this.queue.getJob(id);
    if (!job) throw new NotFoundException(`No job with id ${id}`);
    return {
      id: job.id!,
      name: job.name,
      state,
      data: job.data,
      result: job.returnvalue ?? null,
      failedReason: job.failedReason || null,
      attemptsMade: job.attemptsMade,
      enqueuedAt: job.timestamp,
      finishedAt: job.finishedOn ?? null,
    };
  }
}
