import { context, trace, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { LockBusyError, LockTimeoutError } from '../errors';
import { LockService } from '../lock.service';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { SerializedTracing } from './serialized.tracing';

describe('SerializedTracing', () => {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  beforeAll(() => context.setGlobalContextManager(contextManager));
  afterAll(() => {
    context.disable();
    trace.disable();
  });
  afterEach(() => exporter.reset());

  const traced = (provider = new InMemoryLockProvider()) => {
    const service = new LockService(provider);
    service.traceWith(SerializedTracing.create(provider, 'auto', tracerProvider));
    return service;
  };
  const summary = (span: ReadableSpan) => ({
    name: span.name,
    parent: span.parentSpanContext?.spanId,
    attributes: span.attributes,
    status: span.status.code,
  });

  it("'auto' makes nothing while no TracerProvider is registered; 'on' records through the global one", () => {
    const provider = new InMemoryLockProvider();
    expect(SerializedTracing.create(provider, 'auto')).toBeUndefined();
    expect(SerializedTracing.create(provider, 'on')).toBeInstanceOf(SerializedTracing);
  });

  it('records a hold span only for a key taken at once, and a wait then a hold span for a call that waited, children of the active span', async () => {
    const service = traced();
    const parent = tracerProvider.getTracer('test').startSpan('request');
    await context.with(trace.setSpan(context.active(), parent), async () => {
      let release!: () => void;
      const first = service.run('cart:42', () => new Promise<void>((resolve) => (release = resolve)));
      const second = service.run('cart:42', (lock) => lock.fencingToken);
      release();
      await first;
      expect(await second).toBe(2n);
    });
    parent.end();
    const spans = exporter
      .getFinishedSpans()
      .filter((span) => span.name !== 'request')
      .map(summary);
    const id = parent.spanContext().spanId;
    expect(spans).toEqual([
      {
        name: 'serialized.hold',
        parent: id,
        attributes: {
          'serialized.scope': 'cart',
          'serialized.driver': 'memory',
          'serialized.fencing_token': '1',
          'serialized.outcome': 'released',
        },
        status: SpanStatusCode.UNSET,
      },
      {
        name: 'serialized.wait',
        parent: id,
        attributes: {
          'serialized.scope': 'cart',
          'serialized.driver': 'memory',
          'serialized.fencing_token': '2',
          'serialized.outcome': 'acquired',
        },
        status: SpanStatusCode.UNSET,
      },
      {
        name: 'serialized.hold',
        parent: id,
        attributes: {
          'serialized.scope': 'cart',
          'serialized.driver': 'memory',
          'serialized.fencing_token': '2',
          'serialized.outcome': 'released',
        },
        status: SpanStatusCode.UNSET,
      },
    ]);
  });

  it('records a refused or timed-out wait with its outcome and error, and never the key', async () => {
    const service = traced();
    const held = service.run('wallet:secret-7', () => new Promise((resolve) => setTimeout(resolve, 200)));
    await expect(service.run('wallet:secret-7', () => 'never', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
    await expect(service.run('wallet:secret-7', () => 'never', { waitTimeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await held;
    const waits = exporter.getFinishedSpans().filter((span) => span.name === 'serialized.wait');
    expect(waits.map((span) => [span.attributes['serialized.outcome'], span.status.code, span.events.map((event) => event.name)])).toEqual([
      ['busy', SpanStatusCode.ERROR, ['exception']],
      ['timeout', SpanStatusCode.ERROR, ['exception']],
    ]);
    // Neither attributes, events (the errors' messages) nor status name the key's value.
    for (const span of exporter.getFinishedSpans())
      expect(JSON.stringify([span.attributes, span.events, span.status])).not.toContain('secret-7');
    expect(waits[0].events[0].attributes?.['exception.message']).toContain('wallet:…');
  });
});
