/**
 * The example app's long-task flow (src/reports): 202 + Location, polling
 * `GET /jobs/:id`, and one user's reports built one at a time in request order,
 * over real HTTP (Express and Fastify) and real Redis.
 */
import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { SerializedModule } from 'nestjs-serialized';
import request from 'supertest';
import { ReportsModule, runReportsDemo, type JobView } from '../../src/reports';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

jest.setTimeout(180_000);

describe.each(['express', 'fastify'] as const)('reports: POST /users/:userId/reports and GET /jobs/:id (%s)', (platform) => {
  const prefix = uniqueId('sertest-reports');
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        SerializedModule.forRoot({ driver: 'memory' }),
        ReportsModule.register({ connection: { url: TEST_REDIS_URL }, prefix, durationMs: 300, concurrency: 4 }),
      ],
    }).compile();
    app =
      platform === 'fastify'
        ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: ['error', 'warn'] })
        : moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    await app.listen(0, '127.0.0.1');
    baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    // Only this test's keys: the server is shared.
    const redis = new Redis(TEST_REDIS_URL);
    for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 1000 }) as AsyncIterable<string[]>) {
      if (keys.length) await redis.del(...keys);
    }
    await redis.quit();
  });

  it('accepts a report with 202, a job id and a Location to poll, then shows its result', async () => {
    const accepted = await request(app.getHttpServer()).post('/users/carol/reports');
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({ jobId: expect.any(String) });
    expect(accepted.headers.location).toBe(`/jobs/${accepted.body.jobId}`);

    let view: JobView | undefined;
    await waitFor(
      async () => {
        const polled = await request(app.getHttpServer()).get(accepted.headers.location);
        expect(polled.status).toBe(200);
        view = polled.body as JobView;
        return view.state === 'completed';
      },
      30_000,
      'the report to complete',
    );
    expect(view).toMatchObject({ id: accepted.body.jobId, name: 'report', data: { userId: 'carol' }, failedReason: null });
    expect(view!.result).toMatchObject({ userId: 'carol', startedAt: expect.any(Number), finishedAt: expect.any(Number) });
  });

  it('answers 404 for a job that does not exist', async () => {
    const response = await request(app.getHttpServer()).get('/jobs/999999999');
    expect(response.status).toBe(404);
    expect(response.body.message).toContain('999999999');
  });

  it("builds each user's burst of reports one at a time, in request order (the demo helper)", async () => {
    const [alice, bob] = await Promise.all([
      runReportsDemo(baseUrl, { userId: 'alice', count: 4, pollMs: 100, timeoutMs: 60_000 }),
      runReportsDemo(baseUrl, { userId: 'bob', count: 3, pollMs: 100, timeoutMs: 60_000 }),
    ]);
    for (const result of [alice, bob]) {
      expect(result.notCompleted).toEqual([]);
      expect(result.overlaps).toBe(0);
      expect(result.inOrder).toBe(true);
      expect(result.startOrder).toEqual(result.jobIds);
    }
    expect(alice.jobIds).toHaveLength(4);
    expect(bob.jobIds).toHaveLength(3);
  });
});
