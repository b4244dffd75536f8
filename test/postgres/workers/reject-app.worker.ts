/**
 * One instance of the example app (`src/`, PostgreSQL driver) in a process of its
 * own, listening on a free port, with one more route: `POST /gate/:id`, serialized
 * per id with `mode: 'reject'`. Its handler reports `inside` (id) and then waits
 * until the test sends {type:'open', id}. Driven by the test over IPC; every report
 * carries `at` (Date.now()).
 * Env: DATABASE_URL, KEY_PREFIX, HTTP_ADAPTER (express | fastify).
 *
 * Reports `ready` (its URL) once listening. Commands:
 * - {type:'open', id}: lets the request of `id` finish (or the next one, if none is inside yet).
 * - {type:'try', key}: a direct `tryAcquire(key)` on the app's LockProvider; reports
 *   `tried` with `outcome` 'null' (resolved null), 'lock' (resolved a lock, released
 *   at once) or 'rejected' (with what it rejected with).
 */
import 'reflect-metadata';
import { Controller, Injectable, Module, Param, Post } from '@nestjs/common';
import { LockProvider, Serialized } from 'nestjs-serialized';
import { createApp } from '../../../src/app.factory';

type Command = { type: string; [field: string]: unknown };

const send = (message: Command): void => {
  process.send?.({ ...message, at: Date.now() });
};
const fail = (error: unknown): void =>
  send({ type: 'failed', name: (error as Error)?.name, message: String((error as Error)?.stack ?? error) });

/** One gate per id, opened by the test. */
@Injectable()
class Gate {
  private readonly gates = new Map<string, { promise: Promise<void>; open: () => void }>();

  async pass(id: string): Promise<void> {
    send({ type: 'inside', id });
    await this.of(id).promise;
    this.gates.delete(id);
  }

  open(id: string): void {
    this.of(id).open();
  }

  private of(id: string): { promise: Promise<void>; open: () => void } {
    let gate = this.gates.get(id);
    if (!gate) {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      this.gates.set(id, (gate = { promise, open }));
    }
    return gate;
  }
}

@Controller('gate')
class GateController {
  constructor(private readonly gate: Gate) {}

  @Post(':id')
  @Serialized('id', { mode: 'reject' })
  async hold(@Param('id') id: string) {
    await this.gate.pass(id);
    return { id, pid: process.pid };
  }
}

@Module({ controllers: [GateController], providers: [Gate] })
class GateModule {}

async function main(): Promise<void> {
  const app = await createApp({
    config: { adapter: process.env.HTTP_ADAPTER as 'express' | 'fastify', store: 'memory' },
    serialized: {
      driver: 'postgres',
      postgres: { connectionString: process.env.DATABASE_URL, lockPoolSize: 2 },
      keyPrefix: process.env.KEY_PREFIX,
    },
    imports: [GateModule],
    // What the app logs at error level (a 500's "ExceptionsHandler") goes to stderr, shown when a wait fails.
    logger: ['error'],
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  const gate = app.get(Gate);
  const provider = app.get(LockProvider);

  const tryKey = async (key: string): Promise<void> => {
    const outcome = await provider.tryAcquire(key).then(
      async (lock) => {
        if (lock === null) return { outcome: 'null' };
        await lock.release();
        return { outcome: 'lock' };
      },
      (error: unknown) => ({ outcome: 'rejected', error: error === null ? null : String((error as Error)?.name ?? error) }),
    );
    send({ type: 'tried', key, ...outcome });
  };

  process.on('message', (command: Command) => {
    if (command.type === 'open') gate.open(command.id as string);
    else if (command.type === 'try') tryKey(command.key as string).catch(fail);
  });

  // A lock session opened before the test starts its clock.
  await provider.tryAcquire(`warm-up-${process.pid}`).then((lock) => lock?.release());
  send({ type: 'ready', pid: process.pid, url });
}

process.on('disconnect', () => process.exit(0));
main().catch((error: unknown) => {
  fail(error);
  process.exit(1);
});
