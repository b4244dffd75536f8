import { Controller, Injectable, Module, Param, Post, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { Serialized } from 'nestjs-serialized';
import { createApp } from '../../src/app.factory';
import { ADAPTERS, type Adapter } from '../e2e/http-app';
import { TEST_DATABASE_URL } from '../support/services';
import { deferred, uniqueId, waitFor } from '../support/timing';
import { uniquePrefix } from './support/pg-inspect';

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
    const first = request(one.url).post(`/gate/${id}`).then((r) => r);
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
