/**
 * The example app's `/health` (terminus + SerializedHealthIndicator) and
 * `/metrics` (OpenTelemetry → Prometheus text), as `main.ts` wires them: the
 * MeterProvider is registered globally before the app is created. Jest gives
 * this file its own global object, so the registration stays here.
 */
import { metrics } from '@opentelemetry/api';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../src/app.factory';
import { setUpPrometheusMetrics, type PrometheusMetrics } from '../../src/observability/prometheus.metrics';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';

describe.each(['express', 'fastify'] as const)('the example app on %s: /health and /metrics', (adapter) => {
  let prometheus: PrometheusMetrics;
  let app: INestApplication;

  beforeAll(async () => {
    prometheus = setUpPrometheusMetrics();
    app = await createApp({
      config: { adapter, store: 'memory', rewardTaskMs: 50 },
      serialized: { driver: 'redis', redis: { url: TEST_REDIS_URL }, keyPrefix: uniqueId('example-metrics') },
      metrics: prometheus.exporter,
      logger: false,
    });
  });

  afterAll(async () => {
    await app.close();
    await prometheus.meterProvider.shutdown();
    metrics.disable();
  });

  it('answers /health with the lock backend up', async () => {
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body).toMatchObject({ status: 'ok', info: { locks: { status: 'up', driver: 'redis' } } });
  });

  it('exposes serialized_ series in Prometheus text after serialized requests, labelled by scope and driver, never by key', async () => {
    const user = uniqueId('user');
    const statuses = await Promise.all(
      [1, 2, 3].map(() =>
        request(app.getHttpServer())
          .post(`/users/${user}/rewards/daily`)
          .then((r) => r.status),
      ),
    );
    // Serialized: one claim wins, the others see it claimed.
    expect(statuses.sort()).toEqual([201, 409, 409]);

    const response = await request(app.getHttpServer()).get('/metrics').expect(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    const text = response.text;
    const scope = { scope: 'RewardsController.claimDaily', driver: 'redis' };
    expect(sample(text, 'serialized_lock_acquired_total', scope)).toBe(3);
    expect(sample(text, 'serialized_lock_waiters', scope)).toBe(0);
    // The exporter may append the unit (`_seconds`) to histogram names, depending on its version.
    expect(sample(text, 'serialized_lock_wait_duration(?:_seconds)?_count', { ...scope, outcome: 'acquired' })).toBe(3);
    expect(sample(text, 'serialized_lock_hold_duration(?:_seconds)?_count', { ...scope, outcome: 'released' })).toBe(3);
    expect(text).not.toContain(user);
  });
});

/** The value of the series `name` (a pattern) whose labels include `labels` (in that order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`)
    .join(',');
  const match = new RegExp(`^${name}\\{${wanted}(?:,[^}]*)?\\} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}
