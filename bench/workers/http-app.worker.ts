/**
 * Scenario 6: the example app in a process of its own (so the load generator and
 * the server do not share an event loop), on Express, with the library's
 * in-memory or Redis driver, plus a no-op-interceptor probe route. Replies with
 * its port; reports the CPU time it used so far (`cpu`: user + system, µs) so the
 * scenario can tell what a request costs the server from what the load generator
 * and the rest of the host took; closes on request. `tracing`: the Redis app with
 * `tracing: 'on'`, with no TracerProvider (`noop`) or the SDK registered (`sdk`).
 */
import type { INestApplication } from '@nestjs/common';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { createApp } from '../../src/app.factory';
import { serveRequests, type Message } from '../lib/worker-process';
import { InterceptorProbeModule } from './interceptor-probe.module';

let app: INestApplication | undefined;

/**
 * The OpenTelemetry SDK as an app registers it (a context manager, a global
 * TracerProvider), with an exporter that drops every span: the SDK's cost per
 * request, not an exporter's or a collector's.
 */
function registerTracingSdk(): void {
  const dropping: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropping)] }));
}

serveRequests(async (message: Message): Promise<Message | undefined> => {
  switch (message.type) {
    case 'start': {
      const driver = message.driver as 'memory' | 'redis';
      const tracing = message.tracing as 'noop' | 'sdk' | undefined;
      if (tracing === 'sdk') registerTracingSdk();
      app = await createApp({
        config: { adapter: 'express', store: 'memory' },
        serialized:
          driver === 'redis'
            ? {
                driver,
                redis: { url: message.redisUrl as string },
                keyPrefix: message.keyPrefix as string,
                ...(tracing ? { tracing: 'on' as const } : {}),
              }
            : { driver },
        logger: false,
        imports: [InterceptorProbeModule],
      });
      await app.listen(0, '127.0.0.1');
      const address = app.getHttpServer().address() as { port: number };
      return { type: 'started', port: address.port };
    }
    case 'cpu': {
      const { user, system } = process.cpuUsage();
      return { type: 'cpu', micros: user + system };
    }
    case 'close':
      await app?.close();
      app = undefined;
      return { type: 'closed' };
    default:
      throw new Error(`unknown request ${message.type}`);
  }
});
