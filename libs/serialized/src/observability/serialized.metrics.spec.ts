import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { LockService } from '../lock.service';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { MAX_METRIC_SCOPES, SerializedMetrics } from './serialized.metrics';

describe('SerializedMetrics.create', () => {
  afterEach(() => metrics.disable());

  it('creates nothing while no MeterProvider is registered (every instrument would be a no-op)', () => {
    expect(SerializedMetrics.create(new InMemoryLockProvider())).toBeUndefined();
  });

  it('creates the instruments on the global MeterProvider once one is registered, or on the one given', () => {
    const meterProvider = new MeterProvider();
    expect(SerializedMetrics.create(new InMemoryLockProvider(), meterProvider)).toBeInstanceOf(SerializedMetrics);
    metrics.setGlobalMeterProvider(meterProvider);
    expect(SerializedMetrics.create(new InMemoryLockProvider())).toBeInstanceOf(SerializedMetrics);
  });

  it(`bounds the scopes it keeps: past ${MAX_METRIC_SCOPES}, new ones are recorded as "other"`, () => {
    const instruments = SerializedMetrics.create(new InMemoryLockProvider(), new MeterProvider())!;
    for (let i = 0; i < MAX_METRIC_SCOPES * 3; i++) instruments.acquiredAtOnce(`${i}:value`);
    const scopes = (instruments as unknown as { scopes: Map<string, unknown> }).scopes;
    expect(scopes.size).toBe(MAX_METRIC_SCOPES + 1);
    expect(scopes.has('other')).toBe(true);
  });

  it('counts an uncontended in-memory grant (taken synchronously) and its hold time, without a wait record', async () => {
    class Reader extends MetricReader {
      protected async onForceFlush(): Promise<void> {}
      protected async onShutdown(): Promise<void> {}
    }
    const reader = new Reader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const service = new LockService(new InMemoryLockProvider());
    expect(await service.run('cart:1', () => 'one')).toBe('one');
    expect(await service.run('cart:2', () => service.run('cart:2', () => 'reentrant'))).toBe('reentrant');
    const { resourceMetrics } = await reader.collect();
    const byName = new Map(
      resourceMetrics.scopeMetrics.flatMap((scope) =>
        scope.metrics.map((metric) => [metric.descriptor.name, metric.dataPoints as DataPoint<unknown>[]] as const),
      ),
    );
    // Two acquisitions: the reentrant call records nothing.
    expect(byName.get('serialized.lock.acquired')?.map((point) => [point.attributes, point.value])).toEqual([
      [{ scope: 'cart', driver: 'memory' }, 2],
    ]);
    expect(byName.get('serialized.lock.hold.duration')?.map((point) => [point.attributes, (point.value as Histogram).count])).toEqual([
      [{ scope: 'cart', driver: 'memory', outcome: 'released' }, 2],
    ]);
    expect(byName.get('serialized.lock.wait.duration') ?? []).toEqual([]);
  });
});
