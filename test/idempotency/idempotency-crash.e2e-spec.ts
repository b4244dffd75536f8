import http from 'node:http';
import request from 'supertest';
import { WorkerProcess } from '../support/processes';
import { uniqueId, waitFor } from '../support/timing';
import { serializedOptions, startIdempotencyApp, type Driver, type RunningApp } from './support/idempotency-apps';

const LEASE_MS = 1500;

/** Sends a request and ignores its fate (its server is about to be killed). */
function fireAndForget(url: string, path: string, key: string): void {
  const req = http.request(`${url}${path}`, { method: 'POST', agent: false, headers: { 'Idempotency-Key': key, 'Content-Length': '0' } });
  req.on('error', () => undefined);
  req.end();
}

/**
 * The first instance dies (SIGKILL) while its handler runs: it leaves no stored
 * half-response and no stuck key. The key's lock passes on (Redis: within one
 * lease; PostgreSQL: when the dead session ends) and the duplicate, on another
 * instance, runs the handler.
 */
describe.each([['redis'], ['postgres']] as [Driver][])('@Idempotent when the first instance is killed mid-request (%s)', (driver) => {
  let worker: WorkerProcess | undefined;
  let survivor: RunningApp | undefined;

  afterEach(async () => {
    await worker?.stop();
    survivor?.probe.openAll();
    await survivor?.app.close();
  });

  it('lets the duplicate run the handler on the surviving instance, then replays its response', async () => {
    const keyPrefix = uniqueId('idemcrash');
    worker = WorkerProcess.start('doomed-app', 'test/idempotency/workers/idempotent-app.worker.ts', {
      IDEM_DRIVER: driver,
      KEY_PREFIX: keyPrefix,
      LEASE_MS: String(LEASE_MS),
    });
    const { url: doomedUrl } = (await worker.waitForType('ready', 60_000)) as unknown as { url: string };
    survivor = await startIdempotencyApp('express', serializedOptions(driver, keyPrefix, { leaseMs: LEASE_MS }));
    const id = uniqueId('crash');
    const key = uniqueId('k');

    fireAndForget(doomedUrl, `/idem/hold/${id}`, key);
    await worker.waitFor((m) => m.type === 'inside' && (m.ids as string[]).includes(id), 20_000);
    worker.kill('SIGKILL');
    expect((await worker.exited).signal).toBe('SIGKILL');

    const duplicate = request(survivor.url)
      .post(`/idem/hold/${id}`)
      .set('Idempotency-Key', key)
      .then((r) => r);
    // The duplicate gets the key once the dead holder's lock is gone, and runs the handler itself.
    await waitFor(() => survivor!.probe.inside.has(id), 20_000, 'the duplicate inside the handler on the survivor');
    survivor.probe.open(id);
    const response = await duplicate;
    expect([response.status, response.headers['idempotent-replayed'], response.body.pid]).toEqual([201, undefined, process.pid]);
    expect(survivor.probe.count(`hold:${id}`)).toBe(1);

    const later = await request(survivor.url).post(`/idem/hold/${id}`).set('Idempotency-Key', key);
    expect([later.headers['idempotent-replayed'], later.body]).toEqual(['true', response.body]);
    expect(survivor.probe.count(`hold:${id}`)).toBe(1);
  }, 120_000);
});
