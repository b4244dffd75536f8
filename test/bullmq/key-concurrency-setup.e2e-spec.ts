/**
 * Start-up checks of `concurrency` and `shared` on a BullMQ processor's job
 * method: `concurrency: N` is accepted, `shared` is refused (saying why), and so
 * is a `concurrency` that is no integer 1-1000.
 */
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Serialized, SerializedConfigError, SerializedModule } from 'nestjs-serialized';

// @nestjs/bullmq's `@Processor()` metadata, set by hand: no worker (nor Redis) is needed to start.
const asProcessor = (type: object): void => Reflect.defineMetadata('bullmq:processor_metadata', { name: 'reports' }, type);

/** Starts an app with `processor`; resolves to the start-up error, or `undefined` when it started. */
async function startUp(processor: new (...args: never[]) => unknown): Promise<unknown> {
  @Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], providers: [processor] })
  class ProcessorModule {}
  return NestFactory.createApplicationContext(ProcessorModule, { logger: false, abortOnError: false }).then(
    (app) => app.close().then(() => undefined),
    (error: unknown) => error,
  );
}

describe('@Serialized on a BullMQ job method: concurrency and shared at start-up', () => {
  it('starts with concurrency: N', async () => {
    @Injectable()
    class Reports {
      @Serialized('data.userId', { concurrency: 3 })
      process(job: { data: { userId: string } }) {
        return job.data.userId;
      }
    }
    asProcessor(Reports);
    expect(await startUp(Reports)).toBeUndefined();
  });

  it('refuses shared, saying why and what to use instead', async () => {
    @Injectable()
    class Reports {
      @Serialized('data.userId', { shared: true })
      process(job: { data: { userId: string } }) {
        return job.data.userId;
      }
    }
    asProcessor(Reports);
    const failure = await startUp(Reports);
    expect(failure).toBeInstanceOf(SerializedConfigError);
    expect((failure as Error).message).toContain(
      '@Serialized(…, { shared: true }) on Reports#process: BullMQ jobs do not hold a key shared',
    );
    expect((failure as Error).message).toContain('use concurrency: N');
  });

  it('refuses a concurrency that is no integer 1-1000 (metadata written past the decorator)', async () => {
    @Injectable()
    class Reports {
      @Serialized('data.userId', { concurrency: 2 })
      process(job: { data: { userId: string } }) {
        return job.data.userId;
      }
    }
    asProcessor(Reports);
    // The decorator refuses such a value when applied; the start-up check does not rely on it.
    const metadata = Reflect.getMetadata('serialized:options', Reports.prototype.process) as { options: { concurrency: number } };
    for (const bad of [0, 2.5, 1001]) {
      metadata.options.concurrency = bad;
      const failure = await startUp(Reports);
      expect(failure).toBeInstanceOf(SerializedConfigError);
      expect((failure as Error).message).toContain(
        `@Serialized(…) on Reports#process: concurrency=${bad} is invalid: accepts an integer 1-1000`,
      );
    }
  });
});
