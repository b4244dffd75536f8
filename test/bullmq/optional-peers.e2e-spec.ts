/**
 * `bullmq`, `@nestjs/bullmq` and `ioredis` are optional peers: an app on the
 * in-memory driver that never processes a BullMQ job must not load them (nor the
 * library's job runner), so it runs without them installed.
 */
import { WorkerProcess } from '../support/processes';

jest.setTimeout(120_000);

describe('BullMQ support is loaded only when a job is processed', () => {
  it("leaves bullmq, @nestjs/bullmq, ioredis and the library's job runner unloaded on the in-memory path", async () => {
    const app = WorkerProcess.start('without-bullmq', 'test/bullmq/workers/without-bullmq.ts');
    try {
      const report = await app.waitForType('loaded', 90_000);
      expect(report.greeting).toBe('hello u1');
      const modules = report.modules as string[];
      expect(modules).toContain('@nestjs/core');
      expect(modules).not.toContain('bullmq');
      expect(modules).not.toContain('@nestjs/bullmq');
      expect(modules).not.toContain('ioredis');
      expect(modules).not.toContain('nestjs-serialized/bullmq-runner');
    } finally {
      await app.stop();
    }
  });
});
