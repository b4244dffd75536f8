import request from 'supertest';
import { LockProvider } from 'nestjs-serialized';
import { startTestApp } from '../e2e/http-app';
import { uniqueId, waitFor } from '../support/timing';

describe('maxPendingTotal over HTTP (module option): past the cap, 429 at once naming the key, the handler and the cap', () => {
  it.each(['memory', 'redis'] as const)('%s', async (driver) => {
    const { app, url } = await startTestApp('express', {
      driver,
      keyPrefix: uniqueId('mpt'),
      maxPendingTotal: 2,
      ...(driver === 'redis' ? { redis: { url: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' } } : {}),
    });
    try {
      const ids = [uniqueId('a'), uniqueId('b')];
      // Held by someone else (the provider itself, outside any request): every caller must wait.
      const provider = app.get(LockProvider);
      const holders = await Promise.all(ids.map((id) => provider.acquire(`FixturesController.order:${id}`)));
      const responses: request.Response[] = [];
      const calls = [ids[0], ids[1], ids[0]].map((id, n) =>
        request(url)
          .post(`/fx/order/${id}?n=${n}`)
          .then((response) => {
            responses.push(response);
            return response;
          }),
      );
      // The one past the cap is answered while the keys are still held.
      await waitFor(() => responses.length === 1, 20_000, 'the refused request');
      const [refused] = responses;
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBeDefined();
      expect(refused.body.code).toBe('LOCK_BUSY');
      expect(refused.body.message).toBe('Too many requests are already waiting; retry later');
      await Promise.all(holders.map((holder) => holder.release()));
      const statuses = (await Promise.all(calls)).map((response) => response.status).sort();
      expect(statuses).toEqual([201, 201, 429]);
    } finally {
      await app.close();
    }
  });
});
