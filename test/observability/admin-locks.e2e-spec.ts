/**
 * The example app's `GET /admin/locks/:key` (`lockService.inspect`): only with
 * `ADMIN_LOCKS_TOKEN` configured, and only for a request that carries it.
 */
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../src/app.factory';
import { sleep } from '../support/timing';

const TOKEN = 'a-long-enough-admin-token';
const KEY = encodeURIComponent('RewardsController.claimDaily:42');

describe.each(['express', 'fastify'] as const)('the example app on %s: GET /admin/locks/:key', (adapter) => {
  let app: INestApplication;
  let closed: INestApplication;

  beforeAll(async () => {
    const config = {
      adapter,
      store: 'memory' as const,
      rewardTaskMs: 400,
      reports: { enabled: false, durationMs: 0, concurrency: 1, queuePrefix: 'bull' },
      digest: { enabled: false, cron: '0 0 3 * * *' },
    };
    app = await createApp({ config: { ...config, adminLocksToken: TOKEN }, serialized: { driver: 'memory' }, logger: false });
    closed = await createApp({ config, serialized: { driver: 'memory' }, logger: false });
    await Promise.all([app.init(), closed.init()]);
  });
  afterAll(async () => {
    await Promise.all([app.close(), closed.close()]);
  });

  it('shows the holder of a key and its waiters to a request with the token', async () => {
    const server = app.getHttpServer();
    const claims = [request(server).post('/users/42/rewards/daily'), request(server).post('/users/42/rewards/daily')].map((r) =>
      r.then((x) => x),
    );
    await sleep(150);
    const response = await request(server).get(`/admin/locks/${KEY}`).set('x-admin-token', TOKEN).expect(200);
    expect(response.body).toEqual({
      key: 'RewardsController.claimDaily:42',
      holders: [{ here: true, shared: false, fencingToken: '1', heldForMs: expect.any(Number) }],
      waiting: 1,
      waitingHere: 1,
    });
    await Promise.all(claims);
    expect((await request(server).get(`/admin/locks/${KEY}`).set('x-admin-token', TOKEN).expect(200)).body).toEqual({
      key: 'RewardsController.claimDaily:42',
      holders: [],
      waiting: 0,
      waitingHere: 0,
    });
  });

  it('answers 404 without the token, with another token, and when no token is configured', async () => {
    await request(app.getHttpServer()).get(`/admin/locks/${KEY}`).expect(404);
    await request(app.getHttpServer()).get(`/admin/locks/${KEY}`).set('x-admin-token', `${TOKEN}x`).expect(404);
    await request(closed.getHttpServer()).get(`/admin/locks/${KEY}`).set('x-admin-token', TOKEN).expect(404);
  });
});
