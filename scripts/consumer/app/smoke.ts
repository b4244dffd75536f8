/**
 * The smoke app of the consumer test (scripts/consumer-test.js): a fresh NestJS app
 * using the installed tarball by its package name, with only the required peers;
 * compiled in that app against the packed .d.ts, then run.
 */
import 'reflect-metadata';
import { Controller, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, Serialized, SerializedModule } from 'nestjs-serialized';
import { SerializedTestingModule, withInMemoryLocks } from 'nestjs-serialized/testing';

let running = 0;
let overlaps = 0;
const order: number[] = [];

@Controller('users/:userId')
class RewardsController {
  @Post('rewards/daily')
  @Serialized('userId')
  async claim(@Param('userId') userId: string): Promise<{ userId: string; ran: number }> {
    if (++running > 1) overlaps += 1;
    await new Promise((resolve) => setTimeout(resolve, 20));
    running -= 1;
    order.push(order.length + 1);
    return { userId, ran: order.length };
  }
}

@Module({ imports: [SerializedModule.forRoot()], controllers: [RewardsController] })
class AppModule {}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`tarball smoke: ${what}`);
}

async function main(): Promise<void> {
  // The exports map seals the package: internals are not importable.
  let sealed = false;
  try {
    require.resolve('nestjs-serialized/lock.service');
  } catch (error) {
    sealed = (error as { code?: string }).code === 'ERR_PACKAGE_PATH_NOT_EXPORTED';
  }
  check(sealed, 'a deep import (nestjs-serialized/lock.service) resolved: the exports map does not seal the package');
  check(
    typeof SerializedTestingModule.forRoot === 'function' && typeof withInMemoryLocks === 'function',
    'nestjs-serialized/testing is incomplete',
  );

  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const url = `${await app.getUrl()}/users/42/rewards/daily`.replace('[::1]', '127.0.0.1');
  const responses = await Promise.all(Array.from({ length: 5 }, () => fetch(url, { method: 'POST' })));
  const bodies = (await Promise.all(responses.map((r) => r.json()))) as { userId: string; ran: number }[];
  check(
    responses.every((r) => r.status === 201),
    `statuses ${responses.map((r) => r.status).join(',')}, expected 5 × 201`,
  );
  check(overlaps === 0, `${overlaps} overlapping handler runs: the requests were not serialized`);
  check(
    bodies.every((b) => b.userId === '42'),
    `bodies ${JSON.stringify(bodies)}`,
  );
  check(app.get(LockService) instanceof LockService, 'LockService is not injectable');
  await app.close();
  console.log(`tarball smoke: ok — 5 concurrent POSTs for one key, 5 × 201, ran one at a time (${bodies.map((b) => b.ran).join(',')})`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
