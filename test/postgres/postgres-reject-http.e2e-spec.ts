import { Controller, Injectable, Module, Param, Post, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { Serialized } from 'nestjs-serialized';
import { createApp } from '../../src/app.factory';
import { ADAPTERS, type Adapter } from '../e2e/http-app';
import { TEST_DATABASE_URL } from '../support/services';
import { deferred, uniqueId, waitFor } from '../support/timing';
import { uniquePrefix, PgInspector } from './support/pg-inspect';
import { WorkerProcess } from '../support/processes';
/** Holds each request inside its handler until the test opens the gate for its id. */
@Injectable()
class Gate {
  readonly inside = new Set<string>();
  readonly entered: string[] = [];
  private readonly gates = new Map<string, ReturnType<typeof deferred<void>>>();

  async pass(id: string): Promise<void> {
    this.inside.add(id);
    this.entered.push(id);
    try {
      await this.gateOf(id).promise;
    } finally {
      this.inside.delete(id);
    }
  }

  open(id: string): void {
    this.gateOf(id).resolve();
  }

  /** Lets every held request finish (clean-up after a failed assertion). */
  openAll(): void {
    for (const gate of this.gates.values()) gate.resolve();
  }

  private gateOf(id: string): ReturnType<typeof deferred<void>> {
    let gate = this.gates.get(id);
    if (!gate) this.gates.set(id, (gate = deferred<void>()));
    return gate;
  }
}

@Controller('gate')
class GateController {
  constructor(private readonly gate: Gate) {}

  @Post(':id')
  @Serialized('id', { mode: 'reject' })
  async hold(@Param('id') id: string) {
    await this.gate.pass(id);
    return { id };
  }
}

@Module({ controllers: [GateController], providers: [Gate] })
class GateModule {}

/**
 * `@Serialized(key, { mode: 'reject' })` on two app instances sharing one
 * PostgreSQL database, each with its own provider: a request to one instance
 * while the other holds the key is a 429 with `Retry-After`, not a 500.
 */
describe.each(ADAPTERS.map((a) => [a]))("mode: 'reject' across two app instances on PostgreSQL (%s)", (adapter: Adapter) => {
  const apps: INestApplication[] = [];
  const start = async (keyPrefix: string): Promise<{ url: string; gate: Gate }> => {
    const app = await createApp({
      config: { adapter, store: 'memory' },
      serialized: { driver: 'postgres', postgres: { connectionString: TEST_DATABASE_URL }, keyPrefix },
      imports: [GateModule],
      logger: false,
    });
    apps.push(app);
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
    return { url, gate: app.get(Gate) };
  };

  afterEach(async () => {
    for (const app of apps) app.get(Gate).openAll();
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('answers 429 with Retry-After on one instance while the other holds the key, and the handler never runs', async () => {
    const keyPrefix = uniquePrefix('rejhttp');
    const one = await start(keyPrefix);
    const two = await start(keyPrefix);
    const id = uniqueId('u');
    const first = request(one.url)
      .post(`/gate/${id}`)
      .then((r) => r);
    await waitFor(() => one.gate.inside.has(id), 10_000, 'the first request holds the key on instance one');

    // Failed before: 500 ("ERROR [ExceptionsHandler] null") — tryAcquire rejected with null.
    const second = await request(two.url).post(`/gate/${id}`);
    expect({ status: second.status, retryAfter: second.headers['retry-after'] }).toEqual({ status: 429, retryAfter: '1' });
    expect(two.gate.entered).toEqual([]);

    one.gate.open(id);
    expect((await first).status).toBe(201);
    // Free again: the other instance takes it.
    two.gate.open(id);
    const third = await request(two.url).post(`/gate/${id}`);
    expect(third.status).toBe(201);
    expect(two.gate.entered).toEqual([id]);
  });
});

const WORKER = 'test/postgres/workers/reject-app.worker.ts';

/**
 * Across real processes: two instances of the example app, each
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
      const worker = WorkerProcess.start(adapter, WORKER, {
        DATABASE_URL: TEST_DATABASE_URL,
        KEY_PREFIX: keyPrefix,
        HTTP_ADAPTER: adapter,
      });
      workers.push(worker);
      return worker;
    };
    const instances = [start('express'), start('fastify')];
    const [one, two] = await Promise.all(
      instances.map(async (worker) => ({ worker, url: (await worker.waitForType('ready', 90_000)).url as string })),
    );
    const appName = `nestjs-serialized:${keyPrefix}`;

    const seen: Record<string, unknown>[] = [];
    for (const [holder, other] of [
      [one, two],
      [two, one],
    ]) {
      const id = uniqueId('u');
      const first = request(holder.url)
        .post(`/gate/${id}`)
        .then((r) => r);
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
    const again = request(two.url)
      .post(`/gate/${id}`)
      .then((r) => r);
    await two.worker.waitFor((m) => m.type === 'inside' && m.id === id, 20_000);
    two.worker.send({ type: 'open', id });
    expect((await again).status).toBe(201);
    await waitFor(async () => (await pg.advisoryLocks(appName)) === 0, 10_000, 'no advisory lock left');
    expect([...one.worker.messages, ...two.worker.messages].filter((m) => m.type === 'failed')).toEqual([]);
  }, 150_000);
});
