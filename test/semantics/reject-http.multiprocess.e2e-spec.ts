import request from 'supertest';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { WorkerProcess } from '../support/processes';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

const WORKER = 'test/semantics/workers/reject-app.worker.ts';

/**
 * Issue 10, item 5, across real processes: two instances of the example app, each
 * in a process of its own with its own PostgreSQL provider on one database, one on
 * Express and one on Fastify. While one instance's `@Serialized('id', { mode:
 * 'reject' })` handler holds the key, a request for that key to the other instance
 * is a 429 with `Retry-After` (not a 500), and a direct `tryAcquire` of that lock
 * in the other process resolves `null` (it used to reject with `null`). Each
 * instance takes a turn as the holder.
 */
describe("PostgreSQL across processes: mode 'reject' and tryAcquire while another process holds the key", () => {
  const workers: WorkerProcess[] = [];
  let pg: PgInspector;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(() => pg.close());

  it('answers 429 with Retry-After on one instance while the other holds the key (each way), and tryAcquire there resolves null', async () => {
    const keyPrefix = uniquePrefix('rej5');
    const start = (adapter: string): WorkerProcess => {
      const worker = WorkerProcess.start(adapter, WORKER, { DATABASE_URL: TEST_DATABASE_URL, KEY_PREFIX: keyPrefix, HTTP_ADAPTER: adapter });
      workers.push(worker);
      return worker;
    };
    const instances = [start('express'), start('fastify')];
    const [one, two] = await Promise.all(instances.map(async (worker) => ({ worker, url: (await worker.waitForType('ready', 90_000)).url as string })));
    const appName = `nestjs-serialized:${keyPrefix}`;

    const seen: Record<string, unknown>[] = [];
    for (const [holder, other] of [
      [one, two],
      [two, one],
    ]) {
      const id = uniqueId('u');
      const first = request(holder.url).post(`/gate/${id}`).then((r) => r);
      await holder.worker.waitFor((m) => m.type === 'inside' && m.id === id, 20_000);

      // Failed before: 500 ("ERROR [ExceptionsHandler] null"), no Retry-After.
      const second = await request(other.url).post(`/gate/${id}`);
      other.worker.send({ type: 'try', key: `GateController.hold:${id}` });
      const tried = await other.worker.waitFor((m) => (m.type === 'tried' && m.key === `GateController.hold:${id}`) || m.type === 'failed');
      seen.push({
        holder: holder.worker.name,
        answeredBy: other.worker.name,
        status: second.status,
        retryAfter: second.headers['retry-after'],
        otherHandlerRan: other.worker.messages.some((m) => m.type === 'inside' && m.id === id),
        tryAcquire: tried.type === 'tried' ? { outcome: tried.outcome, error: tried.error } : tried,
        // What PostgreSQL holds for this app: the holder's lock only (the refused try left nothing, waits for nothing).
        advisoryLocks: { granted: await pg.advisoryLocks(appName, true), waiting: await pg.advisoryLocks(appName, false) },
      });

      holder.worker.send({ type: 'open', id });
      expect((await first).status).toBe(201);
    }
    // Failed before: { status: 500, retryAfter: undefined, tryAcquire: { outcome: 'rejected', error: null } } both ways.
    const refused = (holder: string, answeredBy: string) => ({
      holder,
      answeredBy,
      status: 429,
      retryAfter: expect.stringMatching(/^[1-9]\d*$/),
      otherHandlerRan: false,
      tryAcquire: { outcome: 'null', error: undefined },
      advisoryLocks: { granted: 1, waiting: 0 },
    });
    expect(seen).toEqual([refused('express', 'fastify'), refused('fastify', 'express')]);

    // Free again: either instance takes the key, and nothing is left held.
    const id = uniqueId('u');
    const again = request(two.url).post(`/gate/${id}`).then((r) => r);
    await two.worker.waitFor((m) => m.type === 'inside' && m.id === id, 20_000);
    two.worker.send({ type: 'open', id });
    expect((await again).status).toBe(201);
    await waitFor(async () => (await pg.advisoryLocks(appName)) === 0, 10_000, 'no advisory lock left');
    expect([...one.worker.messages, ...two.worker.messages].filter((m) => m.type === 'failed')).toEqual([]);
  }, 150_000);
});
