import type { CallHandler } from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { firstValueFrom, lastValueFrom, of, timer, map, toArray } from 'rxjs';
import { LockService } from '../lock.service';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { IdempotencyConflictError } from './errors';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';
import { IdempotentMetadataAccessor } from './idempotent-metadata.accessor';
import { Idempotent } from './idempotent.decorator';

class PaymentsRpc {
  @Idempotent({ key: 'paymentId' })
  pay(): void {}

  @Idempotent({ key: 'paymentId', mode: 'reject' })
  payOrReject(): void {}
}

/** An RPC message reaching a handler through the interceptor (as a microservice transport delivers it). */
const rpc = (method: keyof PaymentsRpc, data: object) => {
  const ctx = new ExecutionContextHost([data, {}], PaymentsRpc, PaymentsRpc.prototype[method]);
  ctx.setType('rpc');
  return ctx;
};

describe('IdempotencyInterceptor on RPC handlers', () => {
  const provider = new InMemoryLockProvider();
  const service = new IdempotencyService(new LockService(provider), provider);
  const interceptor = new IdempotencyInterceptor(service, new IdempotentMetadataAccessor(new Reflector()), new HttpAdapterHost());
  let runs = 0;
  const handler = (values: unknown[], ms = 20): CallHandler => ({
    handle: () =>
      timer(ms).pipe(
        map(() => ++runs),
        map((n) => values.map((v) => ({ v, n }))),
      ),
  });

  it('runs the handler once per key and replays what it emitted, concurrent or late', async () => {
    runs = 0;
    const call = () => lastValueFrom(interceptor.intercept(rpc('pay', { paymentId: 'p1', amount: 1 }), handler(['a'])).pipe(toArray()));
    const results = await Promise.all([call(), call(), call()]);
    const late = await call();
    expect(runs).toBe(1);
    expect([...results, late]).toEqual(Array(4).fill([[{ v: 'a', n: 1 }]]));
  });

  it("answers a duplicate with IdempotencyConflictError (its transport's 409) in mode 'reject' while the first runs", async () => {
    const first = firstValueFrom(interceptor.intercept(rpc('payOrReject', { paymentId: 'p2' }), handler(['x'], 100)));
    await new Promise((resolve) => setTimeout(resolve, 10));
    const error = await firstValueFrom(interceptor.intercept(rpc('payOrReject', { paymentId: 'p2' }), { handle: () => of('never') })).catch(
      (e: unknown) => e,
    );
    // Without @nestjs/microservices installed the transport-neutral error passes as is.
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    await first;
  });
});
