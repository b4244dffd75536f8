/**
 * `@OncePerTick` in one process: the memory driver under the real @nestjs/schedule
 * (a slow run makes the ticks that fire meanwhile skip, counted in
 * `serialized.tick.skipped`), both decorator orders, and the start-up errors.
 * The multi-process guarantees are in once-per-tick-redis / -postgres.
 */
import { Injectable, Logger, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule, Timeout } from '@nestjs/schedule';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { OncePerTick, SerializedConfigError, SerializedModule } from 'nestjs-serialized';

class InMemoryReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

// Registered before any app is created (jest gives this file its own global object).
const reader = new InMemoryReader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

async function counterValues(name: string): Promise<Map<string, number>> {
  const { resourceMetrics } = await reader.collect();
  const values = new Map<string, number>();
  for (const scope of (resourceMetrics as ResourceMetrics).scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints as DataPoint<number>[]) values.set(JSON.stringify(point.attributes), point.value);
    }
  }
  return values;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function boot(...providers: Type[]) {
  @Module({ imports: [ScheduleModule.forRoot(), SerializedModule.forRoot({ driver: 'memory' })], providers })
  class TestModule {}
  return NestFactory.createApplicationContext(TestModule, { logger: false });
}

describe('@OncePerTick in one process (memory driver)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('skips the ticks that fire while the previous run still runs, in either decorator order, and counts them', async () => {
    const runs: Array<{ job: string; start: number; end: number }> = [];
    @Injectable()
    class SlowJobs {
      @Cron('* * * * * *')
      @OncePerTick()
      async above(): Promise<void> {
        const start = Date.now();
        await sleep(1500);
        runs.push({ job: 'above', start, end: Date.now() });
      }

      @OncePerTick({ name: 'below' })
      @Cron('* * * * * *')
      async below(): Promise<void> {
        const start = Date.now();
        await sleep(1500);
        runs.push({ job: 'below', start, end: Date.now() });
      }
    }
    const app = await boot(SlowJobs);
    try {
      await sleep(5200);
    } finally {
      await app.close();
    }
    for (const job of ['above', 'below']) {
      const mine = runs.filter((run) => run.job === job).sort((a, b) => a.start - b.start);
      expect(mine.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < mine.length; i++) expect(mine[i].start).toBeGreaterThanOrEqual(mine[i - 1].end);
    }
    const ran = await counterValues('serialized.tick.runs');
    const skipped = await counterValues('serialized.tick.skipped');
    expect(ran.get(JSON.stringify({ name: 'SlowJobs.above', driver: 'memory' }))).toBe(runs.filter((run) => run.job === 'above').length);
    expect(skipped.get(JSON.stringify({ name: 'SlowJobs.above', driver: 'memory', reason: 'overlap' }))).toBeGreaterThanOrEqual(1);
    expect(skipped.get(JSON.stringify({ name: 'below', driver: 'memory', reason: 'overlap' }))).toBeGreaterThanOrEqual(1);
  }, 20_000);

  it('runs a @Timeout once per app', async () => {
    let runs = 0;
    @Injectable()
    class Warmup {
      @Timeout(50)
      @OncePerTick()
      warm(): void {
        runs++;
      }
    }
    const app = await boot(Warmup);
    try {
      await sleep(300);
    } finally {
      await app.close();
    }
    expect(runs).toBe(1);
  });

  it('refuses to start when @OncePerTick has no schedule decorator, naming Class#method', async () => {
    @Injectable()
    class Unscheduled {
      @OncePerTick()
      digest(): void {}
    }
    const error = await boot(Unscheduled).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SerializedConfigError);
    expect((error as Error).message).toContain(
      '@OncePerTick on Unscheduled#digest needs @Cron, @Interval or @Timeout of @nestjs/schedule on the same method',
    );
  });

  it('refuses bad options when the decorator is applied, naming Class#method', () => {
    expect(() => {
      class Bad {
        @OncePerTick({ maxClockSkewMs: -1 })
        job(): void {}
      }
      return Bad;
    }).toThrow('@OncePerTick on Bad#job: maxClockSkewMs=-1 is invalid: accepts an integer number of milliseconds from 0 to 3600000');
  });
});
