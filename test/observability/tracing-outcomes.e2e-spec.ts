/**
 * The span outcomes a real backend brings about, on Redis: a hold that loses its
 * lock (`lost`), a wait the backend cannot serve (`backend_error`), a wait its
 * caller gives up (`aborted`) — each with its error recorded and the key's value in
 * no attribute, event or status. tracing.e2e-spec.ts has the spans over HTTP and
 * `acquired`, `busy`; serialized.tracing.spec.ts `timeout`.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { LockBackendError, LockLostError, LockService, RedisLockProvider } from 'nestjs-serialized';
import { SerializedTracing } from 'nestjs-serialized/observability/serialized.tracing';
import { deleteKeysWithPrefix } from '../redis/support/delete-keys';
import { freeLocalPort } from '../support/local-server';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

describe('OpenTelemetry span outcomes on Redis', () => {
  const prefix = uniqueId('tracing');
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const providers: RedisLockProvider[] = [];
  let admin: Redis;

  const traced = (provider: RedisLockProvider): LockService => {
    providers.push(provider);
    const service = new LockService(provider);
    service.traceWith(SerializedTracing.create(provider, 'on', tracerProvider));
    return service;
  };
  const newProvider = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}) =>
    new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, ...options });
  const summary = (span: ReadableSpan) => ({
    name: span.name,
    outcome: span.attributes['serialized.outcome'],
    driver: span.attributes['serialized.driver'],
    status: span.status.code,
    events: span.events.map((event) => [event.name, event.attributes?.['exception.type']]),
  });
  const withoutValue = (value: string) => {
    for (const span of exporter.getFinishedSpans())
      expect(JSON.stringify([span.attributes, span.events, span.status])).not.toContain(value);
  };

  beforeAll(() => {
    admin = new Redis(TEST_REDIS_URL);
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    await Promise.all(providers.map((provider) => provider.close()));
    await deleteKeysWithPrefix(admin, prefix);
    admin.disconnect();
    await tracerProvider.shutdown();
  });

  it('a hold whose lock is taken away ends `lost`, with the LockLostError recorded', async () => {
    const provider = newProvider({ leaseMs: 600 });
    const service = traced(provider);
    const reason = await service.run('ledger:secret-1', async (lock) => {
      // Someone removes the lock in Redis: the next renewal finds it gone.
      await admin.del(provider.redisKeysOf('ledger:secret-1').lock);
      await waitFor(() => lock.signal.aborted, 10_000, 'lock.signal to abort');
      return lock.signal.reason;
    });
    expect(reason).toBeInstanceOf(LockLostError);
    await waitFor(() => exporter.getFinishedSpans().some((span) => span.name === 'serialized.hold'), 5000, 'the hold span');
    expect(exporter.getFinishedSpans().map(summary)).toEqual([
      { name: 'serialized.wait', outcome: 'acquired', driver: 'redis', status: SpanStatusCode.UNSET, events: [] },
      { name: 'serialized.hold', outcome: 'lost', driver: 'redis', status: SpanStatusCode.ERROR, events: [['exception', 'LockLostError']] },
    ]);
    withoutValue('secret-1');
  });

  it('a wait Redis cannot serve ends `backend_error`, with the LockBackendError recorded', async () => {
    // The app's own client, giving up after the first refusal: nothing of it outlives the test.
    const client = new Redis({
      port: await freeLocalPort(),
      host: '127.0.0.1',
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    client.on('error', () => undefined);
    const service = traced(newProvider({ client, connectTimeoutMs: 300 }));
    await expect(service.run('ledger:secret-2', () => 'never')).rejects.toBeInstanceOf(LockBackendError);
    expect(exporter.getFinishedSpans().map(summary)).toEqual([
      {
        name: 'serialized.wait',
        outcome: 'backend_error',
        driver: 'redis',
        status: SpanStatusCode.ERROR,
        events: [['exception', 'LockBackendError']],
      },
    ]);
    withoutValue('secret-2');
  });

  it('a wait its caller gives up (its signal aborts) ends `aborted`, with the reason recorded', async () => {
    const service = traced(newProvider());
    const other = newProvider();
    providers.push(other);
    const held = await other.acquire('ledger:secret-3');
    const caller = new AbortController();
    const waiting = service.run('ledger:secret-3', () => 'never', { signal: caller.signal, waitTimeoutMs: 20_000 });
    await waitFor(async () => (await admin.zcard(other.redisKeysOf('ledger:secret-3').queue)) === 1, 10_000, 'the caller queued');
    caller.abort(new Error('the client went away'));
    await expect(waiting).rejects.toThrow('the client went away');
    await held.release();
    expect(exporter.getFinishedSpans().map(summary)).toEqual([
      { name: 'serialized.wait', outcome: 'aborted', driver: 'redis', status: SpanStatusCode.ERROR, events: [['exception', 'Error']] },
    ]);
    withoutValue('secret-3');
  });
});
