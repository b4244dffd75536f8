/**
 * `@opentelemetry/api` and `@nestjs/terminus` are optional peers: the library
 * imports, serializes and (without metrics) records nothing when they cannot be
 * resolved; only a health check asks for terminus, with a message saying so.
 */
import path from 'node:path';
import { WorkerProcess } from '../support/processes';

jest.setTimeout(120_000);

describe('without @opentelemetry/api and @nestjs/terminus', () => {
  it('loads and serializes; an app that injects the health indicator or sets metrics or tracing: on stops at start-up naming the package', async () => {
    const hide = path.join(__dirname, 'workers', 'hide-optional-peers.js');
    const app = WorkerProcess.start('without-observability-peers', 'test/observability/workers/without-observability-peers.ts', {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${hide}`.trim(),
    });
    try {
      const report = await app.waitForType('loaded', 90_000);
      // The trick works: neither can be resolved in that process.
      expect(report.resolvable).toEqual({ otel: false, terminus: false });
      expect(report.greeting).toBe('hello u1');
      expect(report.ran).toBe('ran');
      expect(report.health).toBe(
        'nestjs-serialized: invalid configuration:\n  - SerializedHealthIndicator needs the optional peer dependency @nestjs/terminus: npm install @nestjs/terminus',
      );
      // An app that needs them does not start: one error, naming what needs which package and how to install it.
      expect(report.startUps).toEqual({
        health:
          'SerializedConfigError: nestjs-serialized: invalid configuration:\n  - SerializedHealthIndicator (injected into HealthService) needs the optional peer dependency @nestjs/terminus: npm install @nestjs/terminus',
        metrics:
          "SerializedConfigError: nestjs-serialized: invalid configuration:\n  - metrics: 'on' needs the optional peer dependency @opentelemetry/api: npm install @opentelemetry/api",
        tracing:
          "SerializedConfigError: nestjs-serialized: invalid configuration:\n  - tracing: 'on' needs the optional peer dependency @opentelemetry/api: npm install @opentelemetry/api",
      });
      const modules = report.modules as string[];
      expect(modules).toContain('@nestjs/core');
      expect(modules).not.toContain('@opentelemetry/api');
      expect(modules).not.toContain('@nestjs/terminus');
    } finally {
      await app.stop();
    }
  });
});
