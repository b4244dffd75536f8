/**
 * The OpenTelemetry instruments, read through an in-memory MetricReader on a
 * MeterProvider registered globally (as NodeSDK does) before the LockService is
 * created. Jest gives every test file its own global object, so this
 * registration is seen by this file only.
 */
import { Logger } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import Redis from 'ioredis';
import { LockBackendError, LockBusyError, LockLostError, LockService, LockTimeoutError, RedisLockProvider } from 'nestjs-serialized';
import { freeLocalPort } from '../support/local-server';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

class InMemoryReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

// The lost lock and the refused connection are logged as warnings: expected here.
Logger.overrideLogger(false);

const reader = new InMemoryReader();
const meterProvider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(meterProvider);

/** Data points of `name`, keyed by their attributes as JSON. */
async function pointsOf(name: string): Promise<Map<string, DataPoint<unknown>>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const points = new Map<string, DataPoint<unknown>>();
  for (const scope of (resourceMetrics as ResourceMetrics).scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints as DataPoint<unknown>[]) points.set(JSON.stringify(point.attributes), point);
    }
  }
  return points;
}

async function valueOf(name: string, attributes: Record<string, string>): Promise<unknown> {
  return (await pointsOf(name)).get(JSON.stringify(attributes))?.value;
}

describe('OpenTelemetry metrics of LockService (real Redis)', () => {
  const prefix = uniqueId('metrics');
  const providers: RedisLockProvider[] = [];
  let admin: Redis;

  const newProvider = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, ...options });
    providers.push(provider);
    return provider;
  };

  beforeAll(() => {
    admin = new Redis(TEST_REDIS_URL);
  });

  afterAll(async () => {
    await Promise.all(providers.map((provider) => provider.close()));
    admin.disconnect();
    await meterProvider.shutdown();
    metrics.disable();
  });

  it('counts acquired, busy and timed-out acquisitions, waiters, and records wait and hold times by scope, never by key', async () => {
    const service = new LockService(newProvider());
    // Another instance holds the key: the busy and timed-out callers meet a real holder.
    const other = newProvider();
    const held = await other.acquire('wallet:42');

    await expect(service.run('wallet:42', () => 'never', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);

    const waiting = service.run('wallet:42', () => 'never', { waitTimeoutMs: 60_000 }).catch((error: unknown) => error);
    const timedOut = service.run('wallet:42', () => 'never', { waitTimeoutMs: 300 });
    await expect(timedOut).rejects.toBeInstanceOf(LockTimeoutError);
    // The long waiter still waits: the gauge shows it.
    expect(await valueOf('serialized.lock.waiters', { scope: 'wallet', driver: 'redis' })).toBe(1);
    await held.release();
    await waiting;

    expect(await valueOf('serialized.lock.busy', { scope: 'wallet', driver: 'redis' })).toBe(1);
    expect(await valueOf('serialized.lock.timeouts', { scope: 'wallet', driver: 'redis' })).toBe(1);
    expect(await valueOf('serialized.lock.acquired', { scope: 'wallet', driver: 'redis' })).toBe(1);
    expect(await valueOf('serialized.lock.waiters', { scope: 'wallet', driver: 'redis' })).toBe(0);

    const waits = await pointsOf('serialized.lock.wait.duration');
    const busyWait = waits.get(JSON.stringify({ scope: 'wallet', driver: 'redis', outcome: 'busy' }))?.value as Histogram;
    const timeoutWait = waits.get(JSON.stringify({ scope: 'wallet', driver: 'redis', outcome: 'timeout' }))?.value as Histogram;
    const acquiredWait = waits.get(JSON.stringify({ scope: 'wallet', driver: 'redis', outcome: 'acquired' }))?.value as Histogram;
    expect(busyWait.count).toBe(1);
    expect(timeoutWait.count).toBe(1);
    // Waited at least its budget (seconds).
    expect(timeoutWait.sum).toBeGreaterThanOrEqual(0.3);
    expect(acquiredWait.count).toBe(1);

    const holds = await pointsOf('serialized.lock.hold.duration');
    expect((holds.get(JSON.stringify({ scope: 'wallet', driver: 'redis', outcome: 'released' }))?.value as Histogram).count).toBe(1);
    // No attribute anywhere carries the key's value.
    for (const name of ['serialized.lock.wait.duration', 'serialized.lock.acquired', 'serialized.lock.waiters']) {
      for (const attributes of (await pointsOf(name)).keys()) expect(attributes).not.toContain('42');
    }
  });

  it('counts several holders of one key (concurrency, shared) as it counts one: each grant, each refusal, each waiter', async () => {
    const service = new LockService(newProvider());
    // Another instance holds both places of the key (concurrency 2), and a reader holds a second key.
    const other = newProvider();
    const places = [await other.acquire('tenant:7', { concurrency: 2 }), await other.acquire('tenant:7', { concurrency: 2 })];
    const reader = await other.acquire('report:9', { shared: true });
    const before = {
      acquired: ((await valueOf('serialized.lock.acquired', { scope: 'tenant', driver: 'redis' })) as number | undefined) ?? 0,
      busy: ((await valueOf('serialized.lock.busy', { scope: 'tenant', driver: 'redis' })) as number | undefined) ?? 0,
    };

    // Full: refused at once in reject mode; two waiters wait.
    await expect(service.run('tenant:7', () => 'never', { concurrency: 2, mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
    const inside = new Set<number>();
    let most = 0;
    const section = (n: number) => async () => {
      inside.add(n);
      most = Math.max(most, inside.size);
      await new Promise((resolve) => setTimeout(resolve, 50));
      inside.delete(n);
    };
    const waiting = [1, 2].map((n) => service.run('tenant:7', section(n), { concurrency: 2, waitTimeoutMs: 60_000 }));
    await waitFor(async () => (await valueOf('serialized.lock.waiters', { scope: 'tenant', driver: 'redis' })) === 2, 10_000, '2 waiters');
    // Readers beside the other instance's reader: no wait.
    await service.run('report:9', () => undefined, { shared: true });
    await Promise.all(places.map((lock) => lock.release()));
    await Promise.all(waiting);
    await reader.release();

    expect(most).toBe(2);
    expect(await valueOf('serialized.lock.busy', { scope: 'tenant', driver: 'redis' })).toBe(before.busy + 1);
    expect(await valueOf('serialized.lock.acquired', { scope: 'tenant', driver: 'redis' })).toBe(before.acquired + 2);
    expect(await valueOf('serialized.lock.acquired', { scope: 'report', driver: 'redis' })).toBe(1);
    expect(await valueOf('serialized.lock.waiters', { scope: 'tenant', driver: 'redis' })).toBe(0);
    const holds = await pointsOf('serialized.lock.hold.duration');
    expect((holds.get(JSON.stringify({ scope: 'tenant', driver: 'redis', outcome: 'released' }))?.value as Histogram).count).toBe(2);
    expect((holds.get(JSON.stringify({ scope: 'report', driver: 'redis', outcome: 'released' }))?.value as Histogram).count).toBe(1);
  });

  it('counts a lock lost while held', async () => {
    const provider = newProvider({ leaseMs: 600 });
    const service = new LockService(provider);
    const lost = await service.run('ledger:7', async (lock) => {
      // Someone removes the lock in Redis: the next renewal finds it gone.
      await admin.del(provider.redisKeysOf('ledger:7').lock);
      await waitFor(() => lock.signal.aborted, 10_000, 'lock.signal to abort');
      return lock.signal.reason;
    });
    expect(lost).toBeInstanceOf(LockLostError);
    expect(await valueOf('serialized.lock.lost', { scope: 'ledger', driver: 'redis' })).toBe(1);
    const holds = await pointsOf('serialized.lock.hold.duration');
    expect((holds.get(JSON.stringify({ scope: 'ledger', driver: 'redis', outcome: 'lost' }))?.value as Histogram).count).toBe(1);
  });

  it('counts a backend error', async () => {
    // The app's own client, giving up after the first refusal: nothing of it outlives the test.
    const client = new Redis({
      port: await freeLocalPort(),
      host: '127.0.0.1',
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    client.on('error', () => undefined);
    const nowhere = new LockService(newProvider({ client, connectTimeoutMs: 300 }));
    await expect(nowhere.run('ledger:8', () => 'never')).rejects.toBeInstanceOf(LockBackendError);
    expect(await valueOf('serialized.lock.backend_errors', { scope: 'ledger', driver: 'redis' })).toBe(1);
  });
});
