import { SetMetadata } from '@nestjs/common';
import { PROPERTY_DEPS_METADATA } from '@nestjs/common/constants';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { LockService } from '../lock.service';
import { SERIALIZED_LOCK_SERVICE, SERIALIZED_OPTIONS_METADATA } from '../serialized.constants';
import { Serialized } from './serialized.decorator';
import { SkipSerialized } from './skip-serialized.decorator';

class Jobs {
  inside = 0;
  maxInside = 0;
  order: string[] = [];

  @Serialized('data.userId')
  @SetMetadata('other:meta', 'kept')
  async process(job: { data: { userId: string; n: number } }): Promise<number> {
    this.inside++;
    this.maxInside = Math.max(this.maxInside, this.inside);
    this.order.push(`${job.data.userId}:${job.data.n}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    this.inside--;
    return job.data.n;
  }

  @Serialized('0')
  double(n: number): number {
    if (n < 0) throw new Error('negative');
    return n * 2;
  }

  @Serialized('1', { scope: 'charge' })
  async charge(_amount: number, accountId: string): Promise<string> {
    return accountId;
  }
}

describe('@Serialized on a method that is not a route handler', () => {
  const withLocks = (): Jobs => {
    const jobs = new Jobs();
    (jobs as unknown as Record<symbol, LockService>)[SERIALIZED_LOCK_SERVICE] = new LockService(new InMemoryLockProvider());
    return jobs;
  };

  it('serializes calls per key read from the arguments, in call order', async () => {
    const jobs = withLocks();
    const results = await Promise.all([1, 2, 3, 4].map((n) => jobs.process({ data: { userId: n % 2 ? 'a' : 'b', n } })));
    expect(results).toEqual([1, 2, 3, 4]);
    expect(jobs.order.filter((o) => o.startsWith('a:'))).toEqual(['a:1', 'a:3']);
    expect(jobs.maxInside).toBe(2); // a and b in parallel, never two of one key
  });

  it('keeps metadata other decorators put on the method, and adds its own', () => {
    const method = Jobs.prototype.process;
    expect(Reflect.getMetadata('other:meta', method)).toBe('kept');
    expect(Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, method)).toMatchObject({ key: 'data.userId', defaultScope: 'Jobs.process' });
    expect(method.name).toBe('process');
  });

  it('asks Nest to inject the LockService once per class', () => {
    const deps = Reflect.getMetadata(PROPERTY_DEPS_METADATA, Jobs) as { key: unknown; type: unknown }[];
    expect(deps.filter((d) => d.key === SERIALIZED_LOCK_SERVICE)).toEqual([{ key: SERIALIZED_LOCK_SERVICE, type: LockService }]);
  });

  it('says what to do when the instance was not created by Nest with the module imported', async () => {
    await expect(new Jobs().charge(1, 'acc')).rejects.toThrow(
      '@Serialized on Jobs#charge: no LockService on this instance. Import SerializedModule.forRoot()',
    );
  });

  it('returns a Promise from a direct call, even of a synchronous method (a throw becomes a rejection)', async () => {
    const jobs = withLocks();
    const result: unknown = jobs.double(2);
    expect(result).toBeInstanceOf(Promise);
    await expect(result).resolves.toBe(4);
    const failed: unknown = jobs.double(-1);
    expect(failed).toBeInstanceOf(Promise);
    await expect(failed).rejects.toThrow('negative');
  });

  it('reads argument N when the path starts with its index', async () => {
    await expect(withLocks().charge(5, 'acc-1')).resolves.toBe('acc-1');
  });

  it('refuses bad options when applied, naming each and Class#method', () => {
    const apply = (options: object) => () => Serialized('id', options)(Jobs.prototype, 'charge', { value: () => undefined });
    expect(apply({ mode: 'later' })).toThrow(`@Serialized on Jobs#charge: mode="later" is invalid: accepts 'wait' or 'reject'`);
    expect(apply({ waitTimeoutMs: -1, leaseMs: 5 })).toThrow(
      '@Serialized on Jobs#charge: waitTimeoutMs=-1 is invalid: accepts an integer number of milliseconds >= 0; leaseMs=5 is invalid',
    );
    expect(() => Serialized('id', { maxPending: 0.5 })(class Batch {})).toThrow('@Serialized on Batch: maxPending=0.5 is invalid');
  });

  it('refuses an option name it does not know when applied (a typo would otherwise be ignored), listing those it accepts', () => {
    const apply = (options: object) => () => Serialized('id', options)(Jobs.prototype, 'charge', { value: () => undefined });
    expect(apply({ waitTimoutMs: 500 })).toThrow(
      '@Serialized on Jobs#charge: unknown option waitTimoutMs (accepted: scope, mode, waitTimeoutMs, leaseMs, maxPending, reentrant, handoff, concurrency, shared, transaction, transform)',
    );
  });

  it('checks concurrency and shared when applied: bounds, the two together, concurrency in transaction mode', () => {
    const apply = (options: object) => () => Serialized('id', options)(Jobs.prototype, 'charge', { value: () => undefined });
    expect(apply({ concurrency: 3 })).not.toThrow();
    expect(apply({ shared: true, transaction: true })).not.toThrow();
    expect(apply({ concurrency: 0 })).toThrow('@Serialized on Jobs#charge: concurrency=0 is invalid: accepts an integer 1-1000');
    expect(apply({ concurrency: 3, shared: true })).toThrow(/shared=true with concurrency=3 is invalid/);
    expect(apply({ concurrency: 2, transaction: true })).toThrow(/concurrency=2 is not available in transaction mode/);
  });
});

describe('@SkipSerialized()', () => {
  it('on a method that is @Serialized itself is a start-up error, whichever is applied first', () => {
    expect(() => {
      class A {
        @SkipSerialized()
        @Serialized('id')
        m(): void {}
      }
      return A;
    }).toThrow('@SkipSerialized on A#m: the method is @Serialized itself; remove one of the two');
    expect(() => {
      class B {
        @Serialized('id')
        @SkipSerialized()
        m(): void {}
      }
      return B;
    }).toThrow('@Serialized on B#m: the method is also @SkipSerialized(); remove one of the two');
  });
});
