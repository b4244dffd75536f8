/**
 * One instance of an app with `@OncePerTick` jobs of @nestjs/schedule, in a process
 * of its own, reporting every run to the test over IPC.
 *
 * Env: DRIVER (memory | redis | postgres), REDIS_URL, DATABASE_URL, KEY_PREFIX (one
 * per test run), JOBS (comma-separated groups, below), CLOCK_OFFSET_MS (this
 * instance's clock shift, see clock-offset.ts).
 *
 * Groups: `fast` (every-second cron, 1 ms body), `naive` (the same job guarded by a
 * reject-mode lock instead: the negative control), `long` (every-second cron, 2.2 s
 * body), `interval` (`@Interval(500)`, 1 ms body), `shared` (two every-second
 * methods sharing one `name`), `crash` (every-second cron, `leaseMs: 1500`, a body that stalls
 * its process's event loop from its first moment until the test kills it).
 *
 * Messages: {type:'ready', pid}, {type:'run', job, pid, start, end} (start/end by
 * this process's own clock, offset included), {type:'started', job, pid, start}
 * (crash group), {type:'failed', message}. Command: {type:'exit'}.
 */
import { CLOCK_OFFSET_MS } from './clock-offset';
import 'reflect-metadata';
import { Injectable, Module, type DynamicModule, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { LockBusyError, LockService, OncePerTick, SerializedModule, type SerializedDriver } from 'nestjs-serialized';

const send = (message: Record<string, unknown>): void => {
  process.send?.({ pid: process.pid, ...message });
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function body(job: string, ms: number): Promise<void> {
  const start = Date.now();
  await sleep(ms);
  send({ type: 'run', job, start, end: Date.now() });
}

@Injectable()
class FastJob {
  @Cron('* * * * * *')
  @OncePerTick()
  async fast(): Promise<void> {
    await body('fast', 1);
  }
}

/**
 * What people write today: a lock in reject mode around the job. A 1 ms job
 * releases long before an instance that woke a few ms later asks, so that one
 * runs the same tick again.
 */
@Injectable()
class NaiveJob {
  constructor(private readonly locks: LockService) {}

  @Cron('* * * * * *')
  async naive(): Promise<void> {
    try {
      await this.locks.run('naive-tick-control', () => body('naive', 1), { mode: 'reject' });
    } catch (error) {
      if (!(error instanceof LockBusyError)) throw error;
    }
  }
}

@Injectable()
class LongJob {
  // Written in the other order: @OncePerTick below the schedule decorator.
  @OncePerTick()
  @Cron('* * * * * *')
  async long(): Promise<void> {
    await body('long', 2200);
  }
}

@Injectable()
class IntervalJob {
  @Interval(500)
  @OncePerTick()
  async every500(): Promise<void> {
    await body('interval', 1);
  }
}

@Injectable()
class SharedJobs {
  @Cron('* * * * * *')
  @OncePerTick({ name: 'shared-digest' })
  async first(): Promise<void> {
    await body('shared:first', 1);
  }

  @OncePerTick({ name: 'shared-digest' })
  @Cron('* * * * * *')
  async second(): Promise<void> {
    await body('shared:second', 1);
  }
}

@Injectable()
class CrashJob {
  @Cron('* * * * * *')
  @OncePerTick({ leaseMs: 1500 })
  slow(): void {
    send({ type: 'started', job: 'crash', start: Date.now() });
    // Stalled from the claim on, so no renewal runs however late the test's kill lands:
    // the lease ends 1500 ms after the claim, as if the process had died there.
    // (The IPC message above is written before this blocks.)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
  }
}

const GROUPS: Record<string, Type> = {
  fast: FastJob,
  naive: NaiveJob,
  long: LongJob,
  interval: IntervalJob,
  shared: SharedJobs,
  crash: CrashJob,
};

@Module({})
class TickAppModule {
  static register(jobs: Type[]): DynamicModule {
    return {
      module: TickAppModule,
      imports: [
        ScheduleModule.forRoot(),
        SerializedModule.forRoot({
          driver: (process.env.DRIVER ?? 'memory') as SerializedDriver,
          keyPrefix: process.env.KEY_PREFIX,
          redis: { url: process.env.REDIS_URL },
          postgres: { connectionString: process.env.DATABASE_URL },
        }),
      ],
      providers: jobs,
    };
  }
}

async function main(): Promise<void> {
  const jobs = (process.env.JOBS ?? 'fast').split(',').map((name) => {
    const job = GROUPS[name.trim()];
    if (!job) throw new Error(`unknown job group ${name}`);
    return job;
  });
  const app = await NestFactory.createApplicationContext(TickAppModule.register(jobs), { logger: ['error', 'warn'] });
  process.on('message', (command: { type: string }) => {
    if (command.type === 'exit') void app.close().finally(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', offset: CLOCK_OFFSET_MS });
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: String((error as Error)?.stack ?? error) });
  process.exit(1);
});
