/**
 * A Nest application context (SerializedModule, redis or postgres driver) that runs
 * background work through `LockService.run` (no HTTP), driven by the test over IPC.
 * Every report carries `at` (Date.now()): the test orders events across processes.
 *
 * Env: DRIVER (redis | postgres), REDIS_URL / DATABASE_URL, KEY_PREFIX, KEY,
 * LEASE_MS, GRACE_MS, SECTION_MS (how long the section runs unless its signal aborts).
 *
 * Commands:
 * - {type:'run'}: runs a section on KEY; reports `inside` (fencing token), `aborted`
 *   (reason name and message) if lock.signal aborts, and `section-ended` when it
 *   returns: when its signal aborts, or after SECTION_MS.
 * - {type:'take'}: waits for KEY (another process's way in) and reports `took`, then releases.
 * - {type:'close'}: reports `closing`, runs app.close(), reports `closed`.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, SerializedModule, type SerializedDriver } from 'nestjs-serialized';

type Command = { type: string; [field: string]: unknown };

const send = (message: Command): void => {
  process.send?.({ ...message, at: Date.now() });
};
const key = process.env.KEY!;
const sectionMs = Number(process.env.SECTION_MS ?? 15_000);

@Module({
  imports: [
    SerializedModule.forRoot({
      driver: process.env.DRIVER as SerializedDriver,
      redis: { url: process.env.REDIS_URL },
      postgres: { connectionString: process.env.DATABASE_URL, lockPoolSize: 2 },
      keyPrefix: process.env.KEY_PREFIX,
      leaseMs: Number(process.env.LEASE_MS),
      shutdownGraceMs: Number(process.env.GRACE_MS),
      waitTimeoutMs: 30_000,
    }),
  ],
})
class WorkerModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: false });
  const locks = app.get(LockService);

  const section = (): Promise<void> =>
    locks.run(key, async (lock) => {
      send({ type: 'inside', token: lock.fencingToken.toString() });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, sectionMs);
        lock.signal.addEventListener('abort', () => {
          const reason = lock.signal.reason as Error;
          send({ type: 'aborted', name: reason?.name, message: reason?.message });
          clearTimeout(timer);
          resolve();
        });
      });
      send({ type: 'section-ended' });
    });

  const take = (): Promise<void> => locks.run(key, (lock) => send({ type: 'took', token: lock.fencingToken.toString() }));

  const fail = (error: unknown): void =>
    send({ type: 'failed', name: (error as Error)?.name, message: String((error as Error)?.stack ?? error) });

  process.on('message', (command: Command) => {
    switch (command.type) {
      case 'run':
        section().catch(fail);
        break;
      case 'take':
        take().catch(fail);
        break;
      case 'close':
        send({ type: 'closing' });
        app.close().then(() => send({ type: 'closed' }), fail);
        break;
    }
  });

  // Connected (and scripts or sessions warmed) before the test starts its clock.
  await locks.run(`warm-up-${process.pid}`, () => undefined);
  send({ type: 'ready', pid: process.pid });
}

process.on('disconnect', () => process.exit(0));
main().catch((error: unknown) => {
  send({ type: 'failed', message: String((error as Error)?.stack ?? error) });
  process.exit(1);
});
