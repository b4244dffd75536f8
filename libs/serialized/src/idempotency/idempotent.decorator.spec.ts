import { SerializedConfigError } from '../config/serialized-config.error';
import { LockService } from '../lock.service';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { IdempotencyMismatchError } from './errors';
import { IDEMPOTENCY_SERVICE, IDEMPOTENT_METADATA } from './idempotency.constants';
import { IdempotencyService } from './idempotency.service';
import { Idempotent } from './idempotent.decorator';

class Payments {
  charges = 0;

  @Idempotent({ key: '0.paymentId' })
  async charge(request: { paymentId: string; amount: number }): Promise<{ id: string; charge: number; at: string }> {
    this.charges++;
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { id: request.paymentId, charge: this.charges, at: new Date(0).toISOString() };
  }
}

describe('@Idempotent on a method that is not a route handler', () => {
  const withService = (): Payments => {
    const payments = new Payments();
    const provider = new InMemoryLockProvider();
    (payments as unknown as Record<symbol, IdempotencyService>)[IDEMPOTENCY_SERVICE] = new IdempotencyService(
      new LockService(provider),
      provider,
    );
    return payments;
  };

  it('runs once per key, concurrent and later calls getting the first return value', async () => {
    const payments = withService();
    const results = await Promise.all([1, 2, 3].map(() => payments.charge({ paymentId: 'p1', amount: 5 })));
    const later = await payments.charge({ paymentId: 'p1', amount: 5 });
    expect(payments.charges).toBe(1);
    expect([...results, later]).toEqual(Array(4).fill({ id: 'p1', charge: 1, at: '1970-01-01T00:00:00.000Z' }));
    await payments.charge({ paymentId: 'p2', amount: 5 });
    expect(payments.charges).toBe(2);
  });

  it('refuses the same key with other arguments', async () => {
    const payments = withService();
    await payments.charge({ paymentId: 'p1', amount: 5 });
    await expect(payments.charge({ paymentId: 'p1', amount: 6 })).rejects.toBeInstanceOf(IdempotencyMismatchError);
  });

  it('says what to do when the instance was not created by Nest with the module imported', async () => {
    await expect(new Payments().charge({ paymentId: 'p', amount: 1 })).rejects.toThrow(
      '@Idempotent on Payments#charge: no IdempotencyService on this instance',
    );
  });

  it('keeps its metadata on the method and refuses bad options when applied', () => {
    expect(Reflect.getMetadata(IDEMPOTENT_METADATA, Payments.prototype.charge)).toMatchObject({
      route: 'Payments.charge',
      handler: 'Payments#charge',
    });
    expect(() => Idempotent({ mode: 'later' as never })).toThrow(SerializedConfigError);
    expect(() => Idempotent({ mode: 'later' as never })).toThrow('@Idempotent: mode="later" is invalid: accepts one of wait, reject');
    expect(() => Idempotent({ ttlMs: 5 })).toThrow(
      '@Idempotent: ttlMs=5 is invalid: accepts an integer number of milliseconds from 100 to',
    );
    expect(() => Idempotent({ headers: ['bad header'] })).toThrow('headers=["bad header"] is invalid: accepts an array of header names');
    expect(() => Idempotent({ key: 'a..b' })).toThrow('key="a..b" is invalid: accepts a name or a dotted path');
    expect(() => Idempotent({ fingerprint: 'x' as never })).toThrow(
      'fingerprint="x" is invalid: accepts a function returning the request fingerprint, or false',
    );
    expect(() => Idempotent({ waitTimeoutMs: -1, required: 'yes' as never })).toThrow(
      /waitTimeoutMs=-1 is invalid: accepts an integer number of milliseconds >= 0\n.*required="yes" is invalid: accepts true or false/,
    );
  });
});
