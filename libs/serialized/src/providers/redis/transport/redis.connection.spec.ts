import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { LockBackendError } from '../../../errors/index';
import { DeadlineQueue } from '../../../internal/deadline.queue';
import { RedisConnection, URGENT, type RedisClient } from './redis.connection';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits for `done` (a loaded host may run the bound late: never a fixed time). */
const until = async (done: () => boolean, limitMs = 20_000): Promise<void> => {
  const end = Date.now() + limitMs;
  while (!done()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
};
const BOUND_MS = 250;

/** A command the fake Redis received: the test answers it, in order or not at all. */
interface Sent {
  readonly name: string;
  answer(value?: unknown): void;
}

/**
 * A client whose commands are answered only when the test says so, standing in
 * for a connected standalone client, or a Cluster whose slot 0 lives on node A and
 * every other slot on node B.
 */
function fakeClient(cluster = false) {
  const sent: Sent[] = [];
  const client = Object.assign(new EventEmitter(), {
    status: 'ready',
    isCluster: cluster,
    slots: cluster ? Array.from({ length: 16384 }, (_, slot) => [slot === 0 ? 'A:1' : 'B:1']) : undefined,
  });
  const command = (name: string) => (): Promise<unknown> =>
    new Promise((resolve) => sent.push({ name, answer: (value = 'OK') => resolve(value) }));
  const make = (options: { maxInFlight?: number } = {}) =>
    new RedisConnection(
      {
        client: client as unknown as RedisClient,
        connectTimeoutMs: BOUND_MS,
        maxInFlight: options.maxInFlight,
        slotOf: (key) => (key.startsWith('a') ? 0 : 1),
      },
      new DeadlineQueue(),
      new Logger('test'),
    );
  return { client, sent, command, make };
}

/** Settles a promise into what it became, without throwing. */
const outcome = (promise: Promise<unknown>): { value?: unknown; error?: unknown; settled: boolean } => {
  const state: { value?: unknown; error?: unknown; settled: boolean } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error: unknown) => Object.assign(state, { error, settled: true }),
  );
  return state;
};

describe('RedisConnection: the backend bound is a bound on silence, not on latency', () => {
  it('never fails a command that waits behind others whose replies keep coming', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make();
    const calls = Array.from({ length: 20 }, (_, i) => outcome(connection.run('k', command(`c${i}`))));
    // The replies trickle in, one every 40 ms: the last one waits over 3× the bound.
    for (let i = 0; i < 20; i++) {
      await sleep(40);
      sent[i].answer(i);
    }
    await sleep(0);
    expect(calls.map((c) => c.error)).toEqual(Array(20).fill(undefined));
    expect(calls.map((c) => c.value)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await connection.close();
  });

  it('fails every waiting command with LockBackendError once nothing has come back for the bound', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make();
    const first = outcome(connection.run('k', command('first')));
    await sleep(150);
    const second = outcome(connection.run('k', command('second')));
    await until(() => first.settled);
    // The first has waited the bound in silence; the second not yet.
    expect(first.error).toBeInstanceOf(LockBackendError);
    expect(String(first.error)).toContain('no reply from Redis');
    expect(connection.mayHaveRun(first.error)).toBe(true);
    expect(second.settled).toBe(false);
    await until(() => second.settled);
    expect(second.error).toBeInstanceOf(LockBackendError);
    // A reply that comes late changes nothing for callers already told.
    sent[0].answer('late');
    await connection.close();
  });

  it('does not count a stalled event loop as silence: replies waiting to be read are read first', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make();
    const call = outcome(connection.run('k', command('c')));
    // The reply "arrives" (is delivered as I/O would be) while the loop is busy for twice the bound.
    setImmediate(() => {
      const until = performance.now() + 2 * BOUND_MS;
      while (performance.now() < until) {
        // a synchronous burst
      }
      setImmediate(() => sent[0].answer('ok'));
    });
    await sleep(3 * BOUND_MS);
    expect(call.error).toBeUndefined();
    expect(call.value).toBe('ok');
    await connection.close();
  });

  it('does not count time this process was not running as silence, even when the reply comes after the stall', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make();
    const call = outcome(connection.run('k', command('c')));
    await sleep(0);
    // The loop is busy for three bounds (a synchronous burst, a starved CPU)...
    const end = performance.now() + 3 * BOUND_MS;
    while (performance.now() < end) {
      // a synchronous burst
    }
    // ...then Redis takes a while longer, but less than the bound, to answer.
    await sleep(BOUND_MS / 3);
    expect(call.settled).toBe(false);
    sent[0].answer('ok');
    await until(() => call.settled);
    expect(call.value).toBe('ok');
    await connection.close();
  });

  it('keeps at most maxInFlight commands on the wire, sends urgent ones first, and drops those whose caller gave up unsent', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make({ maxInFlight: 2 });
    let gaveUp = false;
    const a = outcome(connection.run('k', command('a')));
    const b = outcome(connection.run('k', command('b')));
    const c = outcome(connection.run('k', command('c'), { skip: () => gaveUp }));
    const d = outcome(connection.run('k', command('d')));
    const release = outcome(connection.run('k', command('release'), URGENT));
    expect(sent.map((s) => s.name)).toEqual(['a', 'b']);
    gaveUp = true;
    sent[0].answer();
    await sleep(0);
    expect(sent.map((s) => s.name)).toEqual(['a', 'b', 'release']);
    sent[1].answer();
    await sleep(0);
    // c's caller gave up while it waited here: never sent, nothing to undo.
    expect(sent.map((s) => s.name)).toEqual(['a', 'b', 'release', 'd']);
    expect(c.error).toBeInstanceOf(LockBackendError);
    expect(connection.mayHaveRun(c.error)).toBe(false);
    sent[2].answer();
    sent[3].answer();
    await sleep(0);
    expect([a, b, d, release].every((x) => x.settled && x.error === undefined)).toBe(true);
    await connection.close();
  });

  it('fails commands still queued in the process as unsent when the connection falls silent', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make({ maxInFlight: 1 });
    const onWire = outcome(connection.run('k', command('on-wire')));
    const queued = outcome(connection.run('k', command('queued')));
    await until(() => onWire.settled && queued.settled);
    expect(onWire.error).toBeInstanceOf(LockBackendError);
    expect(connection.mayHaveRun(onWire.error)).toBe(true);
    expect(queued.error).toBeInstanceOf(LockBackendError);
    expect(connection.mayHaveRun(queued.error)).toBe(false);
    expect(sent).toHaveLength(1);
    await connection.close();
  });

  it('Cluster: a silent node is not hidden by the replies of the others', async () => {
    const { sent, command, make } = fakeClient(true);
    const connection = make();
    const onA = outcome(connection.run('a-key', command('to A')));
    const onB = Array.from({ length: 12 }, (_, i) => outcome(connection.run('b-key', command(`to B ${i}`))));
    for (let i = 1; i <= 12; i++) {
      await sleep(35);
      sent[i].answer(i);
    }
    await until(() => onA.settled && onB.every((c) => c.settled));
    // Node B answered all along; node A never did.
    expect(onB.every((c) => c.error === undefined && c.settled)).toBe(true);
    expect(onA.error).toBeInstanceOf(LockBackendError);
    await connection.close();
  });

  it('says whether the connection answered since a given moment (overload) or not (perhaps an outage)', async () => {
    const { sent, command, make } = fakeClient();
    const connection = make();
    const before = performance.now();
    outcome(connection.run('k', command('first')));
    const second = outcome(connection.run('k', command('second')));
    expect(connection.answeredSince('k', before)).toBe(false);
    sent[0].answer();
    await sleep(0);
    expect(connection.answeredSince('k', before)).toBe(true);
    sent[1].answer();
    await sleep(0);
    expect(second.value).toBe('OK');
    await connection.close();
  });

  it('names what the connection was doing when it did not connect in time, or its last error', async () => {
    const { client, sent, command, make } = fakeClient();
    client.status = 'connecting';
    const connection = make();
    const silent = outcome(connection.run('k', command('first')));
    await until(() => silent.settled);
    expect(sent).toEqual([]);
    expect(silent.error).toBeInstanceOf(LockBackendError);
    expect((silent.error as Error).message).toContain(
      `could not connect within ${BOUND_MS} ms (the connection was connecting and had reported no error)`,
    );
    expect(connection.mayHaveRun(silent.error)).toBe(false);

    connection.onError(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    const refused = outcome(connection.run('k', command('second')));
    await until(() => refused.settled);
    expect((refused.error as Error).message).toContain(
      `could not connect within ${BOUND_MS} ms (last error: connect ECONNREFUSED 127.0.0.1:1)`,
    );
    await connection.close();
  });
});
