/**
 * OpenTelemetry traces of `@Serialized` routes over HTTP (Express): a
 * TracerProvider with an in-memory exporter and an AsyncLocalStorage context
 * manager are registered globally (as NodeSDK does) before the app is created,
 * and a middleware stands in for the HTTP instrumentation: it opens the request's
 * span and runs the rest of the request inside it. Jest gives every test file its
 * own global object, so these registrations are seen by this file only.
 */
import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { context, trace, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Serialized, SerializedModule } from 'nestjs-serialized';
import { sleep, waitFor } from '../support/timing';

const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(tracerProvider);

/** The parts of Express's request and response the stand-in middleware uses. */
type Request = { method: string; url: string };
type Response = { statusCode: number; on(event: 'finish', listener: () => void): void };

@Controller('orders')
class OrdersController {
  @Post(':id')
  @Serialized('id', { scope: 'order' })
  async place(@Param('id') id: string) {
    await sleep(150);
    return { id };
  }

  @Post(':id/now')
  @Serialized('id', { scope: 'order', mode: 'reject' })
  placeNow(@Param('id') id: string) {
    return { id };
  }
}

describe('OpenTelemetry traces of @Serialized routes (Express)', () => {
  let app: INestApplication;
  let url: string;
  const tracer = tracerProvider.getTracer('http-stand-in');

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [SerializedModule.forRoot({ driver: 'memory' })],
      controllers: [OrdersController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.use((request: Request, response: Response, next: () => void) => {
      const span = tracer.startSpan(`${request.method} ${request.url}`);
      response.on('finish', () => {
        span.setAttribute('http.response.status_code', response.statusCode);
        span.end();
      });
      context.with(trace.setSpan(context.active(), span), next);
    });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app.close();
    await tracerProvider.shutdown();
    trace.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  const spans = () => exporter.getFinishedSpans();
  const requestSpan = (path: string): ReadableSpan => spans().find((span) => span.name === `POST ${path}`)!;
  const childrenOf = (parent: ReadableSpan) =>
    spans()
      .filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId)
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  const millis = (time: [number, number]) => time[0] * 1000 + time[1] / 1e6;

  it("a request that waited has a wait then a hold span as children of its span; the first one only a hold; no attribute has the key's value", async () => {
    const first = fetch(`${url}/orders/secret-42`, { method: 'POST' });
    await sleep(30);
    const second = fetch(`${url}/orders/secret-42?n=2`, { method: 'POST' });
    expect((await first).status).toBe(201);
    expect((await second).status).toBe(201);
    await waitFor(() => spans().filter((span) => span.name.startsWith('POST')).length === 2, 2000, 'both request spans');

    const holdOnly = childrenOf(requestSpan('/orders/secret-42'));
    expect(holdOnly.map((span) => [span.name, span.attributes])).toEqual([
      [
        'serialized.hold',
        { 'serialized.scope': 'order', 'serialized.driver': 'memory', 'serialized.fencing_token': '1', 'serialized.outcome': 'released' },
      ],
    ]);
    const [wait, hold] = childrenOf(requestSpan('/orders/secret-42?n=2'));
    expect([wait.name, wait.attributes]).toEqual([
      'serialized.wait',
      { 'serialized.scope': 'order', 'serialized.driver': 'memory', 'serialized.fencing_token': '2', 'serialized.outcome': 'acquired' },
    ]);
    expect([hold.name, hold.attributes]).toEqual([
      'serialized.hold',
      { 'serialized.scope': 'order', 'serialized.driver': 'memory', 'serialized.fencing_token': '2', 'serialized.outcome': 'released' },
    ]);
    // In order: it waited about as long as the first one held, then held.
    expect(millis(wait.endTime)).toBeLessThanOrEqual(millis(hold.startTime) + 1);
    expect(millis(wait.endTime) - millis(wait.startTime)).toBeGreaterThan(50);
    for (const span of spans())
      if (span.name.startsWith('serialized.'))
        expect(JSON.stringify([span.attributes, span.events, span.status])).not.toContain('secret-42');
  });

  it.each([
    ['the option', { tracing: 'off' as const }, undefined],
    ['SERIALIZED_TRACING', {}, 'off'],
  ])("records no span with tracing 'off' (%s), though a TracerProvider is registered", async (_how, options, env) => {
    const saved = process.env.SERIALIZED_TRACING;
    if (env !== undefined) process.env.SERIALIZED_TRACING = env;
    let off: INestApplication | undefined;
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [SerializedModule.forRoot({ driver: 'memory', ...options })],
        controllers: [OrdersController],
      }).compile();
      off = moduleRef.createNestApplication({ logger: false });
      await off.listen(0, '127.0.0.1');
      const offUrl = (await off.getUrl()).replace('[::1]', '127.0.0.1');
      const first = fetch(`${offUrl}/orders/7`, { method: 'POST' });
      await sleep(30);
      const statuses = await Promise.all([
        first,
        fetch(`${offUrl}/orders/7`, { method: 'POST' }),
        fetch(`${offUrl}/orders/7/now`, { method: 'POST' }),
      ]);
      expect(statuses.map((response) => response.status).sort()).toEqual([201, 201, 429]);
      // Serialized as usual, and nothing recorded (the stand-in request spans belong to the other app).
      expect(spans().filter((span) => span.name.startsWith('serialized.'))).toEqual([]);
    } finally {
      await off?.close();
      if (saved === undefined) delete process.env.SERIALIZED_TRACING;
      else process.env.SERIALIZED_TRACING = saved;
    }
  });

  it('a 429 has a busy wait span, with its error recorded', async () => {
    const holder = fetch(`${url}/orders/secret-43`, { method: 'POST' });
    await sleep(30);
    expect((await fetch(`${url}/orders/secret-43/now`, { method: 'POST' })).status).toBe(429);
    await holder;
    await waitFor(() => requestSpan('/orders/secret-43/now') !== undefined, 2000, 'the 429 request span');
    const children = childrenOf(requestSpan('/orders/secret-43/now'));
    expect(
      children.map((span) => [span.name, span.attributes['serialized.outcome'], span.status.code, span.events.map((event) => event.name)]),
    ).toEqual([['serialized.wait', 'busy', SpanStatusCode.ERROR, ['exception']]]);
    expect(JSON.stringify([children[0].attributes, children[0].events, children[0].status])).not.toContain('secret-43');
  });
});
