import request from 'supertest';
import { ADAPTERS, type Adapter } from '../e2e/http-app';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { DRIVERS, serializedOptions, startIdempotencyApp, type Driver, type RunningApp } from './support/idempotency-apps';

const PROBLEM = /^application\/problem\+json/;
const replayed = (r: request.Response): boolean => r.headers['idempotent-replayed'] === 'true';

/**
 * `@Idempotent` through real HTTP, on each adapter and backend. Redis and
 * PostgreSQL run two app instances sharing the backend, and the requests of a
 * test alternate between them; the in-memory driver has one instance (it shares
 * nothing across processes by design).
 */
describe.each(DRIVERS.flatMap((driver) => ADAPTERS.map((adapter) => [driver, adapter] as [Driver, Adapter])))(
  '@Idempotent over HTTP (%s, %s)',
  (driver, adapter) => {
    let instances: RunningApp[];
    const keyPrefix = uniqueId('idem');
    const url = (i: number): string => instances[i % instances.length].url;
    const runs = (what: string): number => [...new Set(instances)].reduce((sum, app) => sum + app.probe.count(what), 0);
    const post = (i: number, path: string, key?: string) => {
      const r = request(url(i)).post(path);
      return key === undefined ? r : r.set('Idempotency-Key', key);
    };

    beforeAll(async () => {
      const one = await startIdempotencyApp(adapter, serializedOptions(driver, keyPrefix));
      instances = driver === 'memory' ? [one] : [one, await startIdempotencyApp(adapter, serializedOptions(driver, keyPrefix))];
    });
    afterAll(async () => {
      for (const { probe } of instances) probe.openAll();
      await Promise.all(instances.map(({ app }) => app.close()));
    });

    it('runs the handler once for 20 concurrent duplicates; every response is identical and 19 are replayed', async () => {
      const account = uniqueId('acc');
      const key = uniqueId('k');
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          post(i, `/idem/pay/${account}`, key)
            .send({ amount: 42 })
            .then((r) => r),
        ),
      );
      expect(runs(`pay:${account}`)).toBe(1);
      const shapes = responses.map((r) => ({
        status: r.status,
        body: r.body,
        type: r.headers['content-type'],
        location: r.headers.location,
      }));
      expect(new Set(shapes.map((s) => JSON.stringify(s))).size).toBe(1);
      expect(shapes[0]).toMatchObject({
        status: 201,
        body: { account, amount: 42, run: 1 },
        location: `/idem/pay/${account}/${responses[0].body.id}`,
      });
      expect(shapes[0].type).toMatch(/^application\/json/);
      expect(responses.filter(replayed)).toHaveLength(19);
    });

    it('replays to a late duplicate within the TTL at once, on either instance', async () => {
      const account = uniqueId('acc');
      const key = uniqueId('k');
      const first = await post(0, `/idem/pay/${account}`, key).send({ amount: 1 });
      const late = await post(1, `/idem/pay/${account}`, key).send({ amount: 1 });
      expect([first.status, replayed(first)]).toEqual([201, false]);
      expect([late.status, replayed(late), late.body]).toEqual([201, true, first.body]);
      expect(late.headers.location).toBe(first.headers.location);
      expect(runs(`pay:${account}`)).toBe(1);
    });

    it('runs the handler again for a duplicate after the TTL', async () => {
      const id = uniqueId('t');
      const key = uniqueId('k');
      const first = await post(0, `/idem/ttl/${id}`, key);
      const within = await post(1, `/idem/ttl/${id}`, key);
      expect([first.body.run, replayed(within), within.body]).toEqual([1, true, first.body]);
      await sleep(900); // the route's ttlMs is 600
      const after = await post(0, `/idem/ttl/${id}`, key);
      expect([after.status, replayed(after), runs(`ttl:${id}`)]).toEqual([201, false, 2]);
    });

    it('answers 422 problem details to the same key with a different body, without running the handler', async () => {
      const account = uniqueId('acc');
      const key = uniqueId('k');
      await post(0, `/idem/pay/${account}`, key).send({ amount: 10 }).expect(201);
      const changed = await post(1, `/idem/pay/${account}`, key).send({ amount: 11 });
      expect(changed.status).toBe(422);
      expect(changed.headers['content-type']).toMatch(PROBLEM);
      expect(changed.body).toEqual({
        type: 'urn:nestjs-serialized:problem:idempotency-key-reused',
        title: 'Idempotency-Key reused for a different request',
        status: 422,
        detail: expect.stringContaining('another method, URL or body'),
      });
      // Same key and body on another URL of the handler (another account) is a different request too.
      expect((await post(0, `/idem/pay/${account}-other`, key).send({ amount: 10 })).status).toBe(422);
      expect([runs(`pay:${account}`), runs(`pay:${account}-other`)]).toEqual([1, 0]);
    });

    it("answers 409 in mode 'reject' while the first runs on the other instance, then replays", async () => {
      const id = uniqueId('r');
      const key = uniqueId('k');
      const holder = instances[0];
      const first = post(0, `/idem/reject/${id}`, key).then((r) => r);
      await waitFor(() => holder.probe.inside.has(id), 10_000, 'the first request inside its handler');
      const busy = await post(1, `/idem/reject/${id}`, key);
      expect([busy.status, busy.headers['retry-after']]).toEqual([409, '1']);
      expect(busy.headers['content-type']).toMatch(PROBLEM);
      expect(busy.body).toMatchObject({ type: 'urn:nestjs-serialized:problem:idempotency-request-in-progress', status: 409 });
      holder.probe.open(id);
      const done = await first;
      expect(done.status).toBe(201);
      const again = await post(1, `/idem/reject/${id}`, key);
      expect([again.status, replayed(again), again.body]).toEqual([201, true, done.body]);
      expect(runs(`reject:${id}`)).toBe(1);
    });

    it('answers 400 problem details for a missing required key, an empty key and an over-long key', async () => {
      const missing = await post(0, '/idem/required');
      expect([missing.status, missing.headers['content-type']]).toEqual([400, expect.stringMatching(PROBLEM)]);
      expect(missing.body).toEqual({
        type: 'urn:nestjs-serialized:problem:idempotency-key-missing',
        title: 'Idempotency-Key is missing',
        status: 400,
        detail: 'This operation requires an Idempotency-Key header.',
      });
      for (const bad of ['', '   ', '""', 'x'.repeat(513), '"unterminated']) {
        const response = await post(1, `/idem/pay/${uniqueId('acc')}`, bad).send({ amount: 1 });
        expect({ bad, status: response.status, type: response.body.type }).toEqual({
          bad,
          status: 400,
          type: 'urn:nestjs-serialized:problem:idempotency-key-invalid',
        });
      }
      expect(runs('required')).toBe(0);
    });

    it('reads the draft\'s Structured Field form ("...") and the bare form as the same key', async () => {
      const account = uniqueId('acc');
      const key = uniqueId('k');
      const bare = await post(0, `/idem/pay/${account}`, key).send({ amount: 3 });
      const quoted = await post(1, `/idem/pay/${account}`, `"${key}"`).send({ amount: 3 });
      expect([replayed(quoted), quoted.body]).toEqual([true, bare.body]);
    });

    it('runs every request without a key when the key is optional', async () => {
      const account = uniqueId('acc');
      const responses = [await post(0, `/idem/pay/${account}`).send({}), await post(1, `/idem/pay/${account}`).send({})];
      expect(responses.map((r) => [r.status, replayed(r)])).toEqual([
        [201, false],
        [201, false],
      ]);
      expect(runs(`pay:${account}`)).toBe(2);
    });

    it('does not store a 5xx: the next attempt runs the handler, and its success is replayed', async () => {
      const id = uniqueId('f');
      const key = uniqueId('k');
      const failed = await post(0, `/idem/flaky/${id}`, key).set('x-fail', '1');
      const retried = await post(1, `/idem/flaky/${id}`, key);
      const again = await post(0, `/idem/flaky/${id}`, key);
      expect([failed.status, retried.status, replayed(retried), again.status, replayed(again)]).toEqual([500, 201, false, 201, true]);
      expect(again.body).toEqual(retried.body);
      expect(runs(`flaky:${id}`)).toBe(2);
    });

    it('stores a 5xx with storeServerErrors, and a 4xx HttpException always: both are replayed', async () => {
      const id = uniqueId('s');
      const key = uniqueId('k');
      const stored = [await post(0, `/idem/flaky-stored/${id}`, key), await post(1, `/idem/flaky-stored/${id}`, key)];
      expect(stored.map((r) => [r.status, replayed(r)])).toEqual([
        [500, false],
        [500, true],
      ]);
      expect(stored[1].body).toEqual(stored[0].body);
      const taken = [await post(0, `/idem/taken/${id}`, key), await post(1, `/idem/taken/${id}`, key)];
      expect(taken.map((r) => [r.status, replayed(r)])).toEqual([
        [409, false],
        [409, true],
      ]);
      expect(taken[1].body).toEqual({ statusCode: 409, message: 'already taken (run 1)' });
      expect([runs(`flaky-stored:${id}`), runs(`taken:${id}`)]).toEqual([1, 1]);
    });

    it("keeps tenants apart with scope: 'user.id': one key, two users, two runs", async () => {
      const key = uniqueId('k');
      const before = runs('tenant');
      const alice = await post(0, '/idem/tenant', key).set('x-user-id', 'alice').send({ note: 'n' });
      const bob = await post(1, '/idem/tenant', key).set('x-user-id', 'bob').send({ note: 'n' });
      const aliceAgain = await post(1, '/idem/tenant', key).set('x-user-id', 'alice').send({ note: 'n' });
      expect(runs('tenant') - before).toBe(2);
      expect(bob.body.at).not.toBe(alice.body.at);
      expect([replayed(bob), replayed(aliceAgain), aliceAgain.body]).toEqual([false, true, alice.body]);
      // No user: the scope is missing.
      expect((await post(0, '/idem/tenant', key).send({ note: 'n' })).status).toBe(400);
    });

    it('does not store a response over maxResponseBytes: the duplicate runs the handler', async () => {
      const id = uniqueId('b');
      const key = uniqueId('k');
      const responses = [await post(0, `/idem/big/${id}`, key), await post(1, `/idem/big/${id}`, key)];
      expect(responses.map((r) => [r.status, replayed(r), r.body.run])).toEqual([
        [201, false, 1],
        [201, false, instances.length === 1 ? 2 : 1],
      ]);
      expect(runs(`big:${id}`)).toBe(2);
    });

    it('skips the 422 check with fingerprint: false, and reads a key from the body', async () => {
      const id = uniqueId('a');
      const key = uniqueId('k');
      const first = await post(0, `/idem/any-body/${id}`, key).send({ v: 1 });
      const other = await post(1, `/idem/any-body/${id}`, key).send({ v: 2 });
      expect([replayed(other), other.body]).toEqual([true, first.body]);
      const requestId = uniqueId('req');
      const a = await request(url(0)).post('/idem/body-key').send({ requestId });
      const b = await request(url(1)).post('/idem/body-key').send({ requestId });
      expect([replayed(b), b.body]).toEqual([true, a.body]);
    });
  },
);
