import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
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
});
