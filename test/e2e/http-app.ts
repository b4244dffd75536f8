import http from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { SerializedModuleOptions } from 'nestjs-serialized';
import { createApp } from '../../src/app.factory';
import { FixturesModule } from './fixtures/fixtures.module';

export type Adapter = 'express' | 'fastify';
export const ADAPTERS: Adapter[] = ['express', 'fastify'];

/** The example app plus the fixture routes, listening on an ephemeral port. */
export async function startTestApp(
  adapter: Adapter,
  serialized: SerializedModuleOptions = { driver: 'memory' },
): Promise<{ app: INestApplication; url: string }> {
  const app = await createApp({
    config: { adapter, store: 'memory', rewardTaskMs: 100, resourceTaskMs: 30 },
    serialized,
    imports: [FixturesModule],
    logger: false,
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return { app, url };
}

/** Sends a POST with Node's http client, on a connection of its own; `leave()` destroys it: a client that leaves when the test says. */
export function postAndLeave(url: string, path: string): { leave(): void } {
  const request = http.request(`${url}${path}`, { method: 'POST', agent: false });
  request.on('error', () => undefined);
  request.end();
  return { leave: () => request.destroy() };
}
