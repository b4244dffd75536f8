import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { LockProvider, LockService, type InMemoryLockProvider } from 'nestjs-serialized';
import { uniqueId, waitFor } from '../support/timing';
import { Gates } from './fixtures/keys.controller';
import { Recorder } from './fixtures/recorder.service';
import { ADAPTERS, postAndLeave, startTestApp, type Adapter } from './http-app';

describe.each(ADAPTERS.map((a) => [a]))('@Serialized over HTTP (%s)', (adapter: Adapter) => {
  let app: INestApplication;
  let url: string;
  let recorder: Recorder;
  let gates: Gates;

  beforeAll(async () => {
    ({ app, url } = await startTestApp(adapter));
    recorder = app.get(Recorder);
    gates = app.get(Gates);
  });
  afterAll(async () => {
    await app.close();
  });

  const post = (path: string) => request(url).post(path);
  /** supertest sends lazily; this starts the request now, for tests that order requests in time. */
  const start = (path: string) => post(path).then((response) => response);
  /** How many callers wait for `key` in this process. */
  const waitingFor = async (key: string) => (await app.get(LockService).inspect(key)).waitingHere;
  /** Every section the fixtures entered, by label (test/e2e/fixtures/recorder.service.ts). */
  const entered = (label: string) => recorder.events.includes(`start:${label}`);

  describe("the example app's scenarios", () => {
    it('daily reward: 20 duplicates credit exactly one reward; the naive handler credits many', async () => {
      const user = uniqueId('u');
      const naiveUser = uniqueId('n');
      const [serialized, naive] = await Promise.all([
        Promise.all(Array.from({ length: 20 }, () => post(`/users/${user}/rewards/daily`))),
        Promise.all(Array.from({ length: 20 }, () => post(`/naive/users/${naiveUser}/rewards/daily`))),
      ]);
      expect(serialized.filter((r) => r.status === 201)).toHaveLength(1);
      expect(serialized.filter((r) => r.status === 409)).toHaveLength(19);
      expect((await request(url).get(`/users/${user}/rewards`)).body.rewardCount).toBe(1);
      // The race is real: without serialization the same handler credits more than once.
      expect(naive.filter((r) => r.status === 201).length).toBeGreaterThan(1);
      expect((await request(url).get(`/users/${naiveUser}/rewards`)).body.rewardCount).toBeGreaterThan(1);
    });

    it('resource creation: 20 duplicates create one resource; the naive handler creates duplicates', async () => {
      const user = uniqueId('u');
      const naiveUser = uniqueId('n');
      const body = { name: 'invoice' };
      const [serialized] = await Promise.all([
        Promise.all(Array.from({ length: 20 }, () => post(`/users/${user}/resources`).send(body))),
        Promise.all(Array.from({ length: 20 }, () => post(`/naive/users/${naiveUser}/resources`).send(body))),
      ]);
      expect(serialized.map((r) => r.status).sort()).toEqual([...Array(19).fill(200), 201]);
      expect((await request(url).get(`/users/${user}/resources`)).body).toHaveLength(1);
      expect((await request(url).get(`/users/${naiveUser}/resources`)).body.length).toBeGreaterThan(1);
    });

    it('resource creation stores the lock’s fencing token with the write; it increases from one holder to the next', async () => {
      const user = uniqueId('f');
      const first = await post(`/users/${user}/resources`).send({ name: 'a' }).expect(201);
      const second = await post(`/users/${user}/resources`).send({ name: 'b' }).expect(201);
      expect(first.body.fencingToken).toMatch(/^\d+$/);
      expect(BigInt(second.body.fencingToken)).toBeGreaterThan(BigInt(first.body.fencingToken));
      // An existing resource is not written again, so no token is stored for it.
      expect((await post(`/users/${user}/resources`).send({ name: 'a' }).expect(200)).body.fencingToken).toBeUndefined();
    });

    it('different keys do not wait for each other', async () => {
      const id = uniqueId('k');
      const tags = ['a', 'b', 'c'].map((k) => `${id}-${k}`);
      const sent = tags.map((tag) => start(`/fx/gated/${tag}?tag=${tag}`));
      // Three handlers on three keys, none let go: all three are inside at once.
      await waitFor(() => tags.every((tag) => gates.entered.includes(tag)), 5000, 'the three handlers to be inside at once');
      for (const tag of tags) gates.release(tag);
      expect((await Promise.all(sent)).map((r) => r.status)).toEqual([201, 201, 201]);
    });
  });

  describe('order and exclusion', () => {
    it('runs requests of one key one at a time, in arrival order', async () => {
      const id = uniqueId('o');
      const key = `FixturesController.gated:${id}`;
      const tags = [0, 1, 2, 3, 4, 5].map((n) => `${id}-${n}`);
      const sent: Promise<request.Response>[] = [];
      for (const [n, tag] of tags.entries()) {
        sent.push(start(`/fx/gated/${id}?tag=${tag}`));
        // Each request is inside, or in the line, before the next is sent: that is the arrival order.
        await waitFor(async () => (n === 0 ? gates.entered.includes(tag) : (await waitingFor(key)) === n), 5000, `request ${n} to arrive`);
      }
      for (const tag of tags) gates.release(tag);
      expect((await Promise.all(sent)).map((r) => r.status)).toEqual(Array(6).fill(201));
      const ours = recorder.events.filter((e) => tags.some((tag) => e === `start:gated:${tag}` || e === `end:gated:${tag}`));
      expect(ours).toEqual(tags.flatMap((tag) => [`start:gated:${tag}`, `end:gated:${tag}`]));
      expect(recorder.maxInside.get(`gated:${id}`)).toBe(1);
    });

    it('handlers sharing an explicit scope exclude each other', async () => {
      const id = uniqueId('s');
      const [a1, b, a2] = ['a1', 'b', 'a2'].map((t) => `${id}-${t}`);
      const first = start(`/fx/shared-a/${id}?tag=${a1}`);
      await waitFor(() => entered(`shared:${a1}`), 5000, 'the first handler to enter');
      const others = [start(`/fx/shared-b/${id}?tag=${b}`), start(`/fx/shared-a/${id}?tag=${a2}`)];
      // The other route of the scope waits for the key as the same route does.
      await waitFor(async () => (await waitingFor(`fx-shared:${id}`)) === 2, 5000, 'both others to wait');
      expect([entered(`shared:${b}`), entered(`shared:${a2}`)]).toEqual([false, false]);
      for (const tag of [a1, b, a2]) gates.release(tag);
      expect((await Promise.all([first, ...others])).map((r) => r.status)).toEqual([201, 201, 201]);
      expect(recorder.maxInside.get(`shared:${id}`)).toBe(1);
    });

    it('a class-level @Serialized covers every route of the controller', async () => {
      const id = uniqueId('c');
      const [one, two] = [`${id}-one`, `${id}-two`];
      const first = start(`/fx-class/${id}/one?tag=${one}`);
      await waitFor(() => entered(`class:${one}`), 5000, 'the first route to enter');
      const second = start(`/fx-class/${id}/two?tag=${two}`);
      await waitFor(async () => (await waitingFor(`fx-class:${id}`)) === 1, 5000, 'the other route to wait');
      expect(entered(`class:${two}`)).toBe(false);
      for (const tag of [one, two]) gates.release(tag);
      expect([(await first).status, (await second).status]).toEqual([201, 201]);
      expect(recorder.maxInside.get(`class:${id}`)).toBe(1);
    });

    it('holds the lock until an Observable handler completes', async () => {
      const id = uniqueId('st');
      const [one, two] = [`${id}-1`, `${id}-2`];
      const get = (tag: string) =>
        request(url)
          .get(`/fx/stream/${id}?tag=${tag}`)
          .then((r) => r);
      const first = get(one);
      await waitFor(() => entered(`stream:${one}`), 5000, 'the first Observable to start');
      const second = get(two);
      await waitFor(async () => (await waitingFor(`FixturesController.stream:${id}`)) === 1, 5000, 'the second request to wait');
      // The first handler returned its Observable long ago; the key is held until it completes.
      expect(entered(`stream:${two}`)).toBe(false);
      gates.release(one);
      await waitFor(() => entered(`stream:${two}`), 5000, 'the second Observable to start once the first completed');
      gates.release(two);
      const responses = await Promise.all([first, second]);
      expect(responses.map((r) => [r.status, r.body.tag])).toEqual([
        [200, one],
        [200, two],
      ]);
      expect(recorder.maxInside.get(`stream:${id}`)).toBe(1);
    });

    it('is reentrant: a handler calling a service serialized on the same scope and key does not deadlock', async () => {
      const id = uniqueId('w');
      const response = await post(`/fx/reentrant/${id}`).expect(201);
      expect(response.body.result).toBe(`debited ${id}`);
    });

    it('passes a handler error through unchanged and releases the key', async () => {
      const id = uniqueId('b');
      const first = await post(`/fx/boom/${id}`);
      expect(first.status).toBe(404);
      expect(first.body.message).toBe(`no such thing: ${id}`);
      await post(`/fx/boom/${id}`).expect(404);
    });
  });

  describe('busy keys → 429 with Retry-After', () => {
    it("mode 'reject' answers 429 at once while the key is held", async () => {
      const id = uniqueId('r');
      const [holder, late] = [`${id}-holder`, `${id}-late`];
      const first = start(`/fx/reject/${id}?tag=${holder}`);
      await waitFor(() => entered(`reject:${holder}`), 5000, 'the holder to enter');
      // Answered while the holder is still inside (its gate is shut): nothing waited for it.
      const second = await post(`/fx/reject/${id}?tag=${id}-refused`);
      expect(second.status).toBe(429);
      expect(second.headers['retry-after']).toBe('1');
      expect(second.body.code).toBe('LOCK_BUSY');
      // The lock key and the handler are the server's (its log), not the client's.
      expect(second.body.message).toBe('Another request with the same key is in progress; retry later');
      expect(JSON.stringify(second.body)).not.toMatch(new RegExp(`${id}|FixturesController|reject`));
      expect(entered(`reject:${id}-refused`)).toBe(false);
      gates.release(holder);
      expect((await first).status).toBe(201);
      // Free again: a request after the first one finished is accepted.
      gates.release(late);
      expect((await post(`/fx/reject/${id}?tag=${late}`)).status).toBe(201);
    });

    it('a waiter past waitTimeoutMs gets 429 (LockTimeoutError) and its handler never runs', async () => {
      const id = uniqueId('t');
      const first = start(`/fx/timeout/${id}?tag=${id}`);
      await waitFor(() => recorder.started(`timeout:${id}`).length === 1, 5000, 'the holder to enter');
      // The holder stays inside (its gate is shut) past the waiter's 100 ms.
      const second = await post(`/fx/timeout/${id}?tag=${id}`);
      expect(second.status).toBe(429);
      expect(second.headers['retry-after']).toBe('1');
      expect(second.body.code).toBe('LOCK_TIMEOUT');
      gates.release(id);
      expect((await first).status).toBe(201);
      expect(recorder.started(`timeout:${id}`)).toHaveLength(1);
    });

    it('beyond maxPending waiters, 429 (LockBusyError) at once', async () => {
      const id = uniqueId('p');
      const [holderTag, waiterTag] = [`${id}-holder`, `${id}-waiter`];
      const holder = start(`/fx/pending/${id}?tag=${holderTag}`);
      await waitFor(() => entered(`pending:${holderTag}`), 5000, 'the holder to enter');
      const waiter = start(`/fx/pending/${id}?tag=${waiterTag}`);
      await waitFor(async () => (await waitingFor(`FixturesController.pending:${id}`)) === 1, 5000, 'one waiter');
      const third = await post(`/fx/pending/${id}?tag=${id}-third`);
      expect(third.status).toBe(429);
      expect(third.body.code).toBe('LOCK_BUSY');
      expect(third.body.message).toBe('Too many requests with the same key are already waiting; retry later');
      for (const tag of [holderTag, waiterTag]) gates.release(tag);
      expect([(await holder).status, (await waiter).status]).toEqual([201, 201]);
      expect(entered(`pending:${id}-third`)).toBe(false);
    });
  });

  describe('a client that leaves', () => {
    it('while waiting: leaves the queue, and its handler never runs', async () => {
      const id = uniqueId('a');
      const key = `FixturesController.gated:${id}`;
      const locks = app.get(LockService);
      const holder = start(`/fx/gated/${id}?tag=holder-${id}`);
      await waitFor(() => gates.entered.includes(`holder-${id}`), 3000, 'the holder to enter');
      const gone = postAndLeave(url, `/fx/gated/${id}?tag=gone-${id}`);
      await waitFor(async () => (await locks.inspect(key)).waitingHere === 1, 3000, 'the second request to wait');
      gone.leave();
      // The server saw the client leave: its place in the line is gone before the holder lets go.
      await waitFor(async () => (await locks.inspect(key)).waitingHere === 0, 3000, 'the gone request to leave the line');
      gates.release(`after-${id}`);
      const after = start(`/fx/gated/${id}?tag=after-${id}`);
      await waitFor(async () => (await locks.inspect(key)).waitingHere === 1, 3000, 'the third request to wait');
      gates.release(`holder-${id}`);
      expect((await holder).status).toBe(201);
      expect((await after).status).toBe(201);
      expect(recorder.started('gated:').filter((t) => t.endsWith(id))).toEqual([`gated:holder-${id}`, `gated:after-${id}`]);
    });

    it('while its handler runs: the handler finishes and then releases the key', async () => {
      const id = uniqueId('h');
      const [left, next] = [`left-${id}`, `next-${id}`];
      const leaving = postAndLeave(url, `/fx/gated/${id}?tag=${left}`);
      await waitFor(() => gates.entered.includes(left), 5000, 'the handler to enter');
      leaving.leave();
      await waitFor(() => recorder.events.includes(`left:${left}`), 5000, 'the server to see the client leave');
      // Its client is gone; the handler is still inside, and still holds the key.
      const after = start(`/fx/gated/${id}?tag=${next}`);
      await waitFor(async () => (await waitingFor(`FixturesController.gated:${id}`)) === 1, 5000, 'the next request to wait');
      expect(entered(`gated:${next}`)).toBe(false);
      gates.release(left);
      await waitFor(() => recorder.events.includes(`end:gated:${left}`), 5000, 'the handler to finish');
      gates.release(next);
      expect((await after).status).toBe(201);
    });
  });

  describe('keys → 400 naming the key and where it looked', () => {
    it('a bare name is looked up in params, then user, then body, then query', async () => {
      expect((await post('/fx/name/p1?expect=p1&tenant=q1').send({ tenant: 'b1' })).body.held).toBe(true);
      expect((await post('/fx/name?expect=b2&tenant=q2').send({ tenant: 'b2' })).body.held).toBe(true);
      expect((await post('/fx/name?expect=q3&tenant=q3')).body.held).toBe(true);
      const missing = await post('/fx/name');
      expect(missing.status).toBe(400);
      expect(missing.body.code).toBe('SERIALIZATION_KEY_MISSING');
      expect(missing.body.message).toBe(
        'Serialization key "tenant" is missing or empty (looked in params.tenant, user.tenant, body.tenant, query.tenant)',
      );
    });

    it('user.id reads the user a guard put on the request', async () => {
      expect((await post('/fx/user?expect=42').set('x-user-id', '42')).body.held).toBe(true);
      const missing = await post('/fx/user');
      expect(missing.status).toBe(400);
      expect(missing.body.message).toContain('"user.id"');
      expect(missing.body.message).toContain('req.user.id');
    });

    it('headers.idempotency-key reads a header', async () => {
      expect((await post('/fx/header?expect=abc').set('Idempotency-Key', 'abc')).body.held).toBe(true);
      const missing = await post('/fx/header');
      expect(missing.status).toBe(400);
      expect(missing.body.message).toContain('headers.idempotency-key');
    });

    it('rejects empty, non-scalar and over-long values', async () => {
      expect((await post('/fx/account').send({ accountId: 7 })).body.held).toBe(true);
      const empty = await post('/fx/account').send({ accountId: '' });
      expect(empty.status).toBe(400);
      expect(empty.body.message).toContain('missing or empty');
      const object = await post('/fx/account').send({ accountId: { $gt: '' } });
      expect(object.status).toBe(400);
      expect(object.body.message).toContain('must be a string or a number');
      expect(object.body.code).toBe('SERIALIZATION_KEY_INVALID');
      const long = await post('/fx/account').send({ accountId: 'x'.repeat(513) });
      expect(long.status).toBe(400);
      expect(long.body.message).toContain('longer than 512');
      expect((await post('/fx/account').send({ accountId: 'x'.repeat(512) })).status).toBe(201);
    });

    it('a function key returning nothing is a 400 saying so, without Class#method (that is for the log)', async () => {
      expect((await post('/fx/fn?expect=t1').set('x-tenant', 't1')).body.held).toBe(true);
      const missing = await post('/fx/fn');
      expect(missing.status).toBe(400);
      expect([missing.body.code, missing.body.message]).toEqual(['SERIALIZATION_KEY_MISSING', 'The key function returned nothing']);
    });
  });

  describe('afterwards', () => {
    it('leaves no lock state behind once every request finished', async () => {
      const provider = app.get(LockProvider) as InMemoryLockProvider;
      await waitFor(() => provider.activeKeys === 0, 3000, 'idle provider');
      expect(provider.timerArmed).toBe(false);
    });
  });
});
