import { Reflector } from '@nestjs/core';
import { Cron, Interval, Timeout } from '@nestjs/schedule';
import { SerializedConfigError } from '../config/serialized-config.error';
import { SerializedMetadataAccessor } from '../metadata/serialized-metadata.accessor';
import { OncePerTick } from './once-per-tick.decorator';

const accessor = new SerializedMetadataAccessor(new Reflector());

describe('@OncePerTick', () => {
  class Jobs {
    @Cron('0 0 3 * * *', { timeZone: 'Europe/Paris' })
    @OncePerTick()
    above(): void {}

    @OncePerTick({ name: 'digest', maxClockSkewMs: 200, leaseMs: 5000 })
    @Cron('*/5 * * * * *')
    below(): void {}

    @Interval(500)
    @OncePerTick()
    interval(): void {}

    @OncePerTick()
    @Timeout(50)
    timeout(): void {}
  }

  it('keeps the schedule readable on the method in either order', () => {
    expect(accessor.scheduleOf(Jobs.prototype.above)).toEqual({
      kind: 'cron',
      cronTime: '0 0 3 * * *',
      timeZone: 'Europe/Paris',
      utcOffset: undefined,
    });
    expect(accessor.scheduleOf(Jobs.prototype.below)).toEqual({
      kind: 'cron',
      cronTime: '*/5 * * * * *',
      timeZone: undefined,
      utcOffset: undefined,
    });
    expect(accessor.scheduleOf(Jobs.prototype.interval)).toEqual({ kind: 'interval', ms: 500 });
    expect(accessor.scheduleOf(Jobs.prototype.timeout)).toEqual({ kind: 'timeout', ms: 50 });
  });

  it('records its options under its own key, the name defaulting to <Class>.<method>', () => {
    expect(accessor.oncePerTick(Jobs.prototype.above)).toEqual({ options: {}, handler: 'Jobs#above', name: 'Jobs.above' });
    expect(accessor.oncePerTick(Jobs.prototype.below)).toEqual({
      options: { name: 'digest', maxClockSkewMs: 200, leaseMs: 5000 },
      handler: 'Jobs#below',
      name: 'digest',
    });
    expect(Jobs.prototype.above.name).toBe('above');
  });

  it('refuses unknown and out-of-range options, naming Class#method', () => {
    const decorate = (options: object) => () => {
      class Bad {
        @OncePerTick(options)
        job(): void {}
      }
      return Bad;
    };
    expect(decorate({ leaseMs: 10 })).toThrow(SerializedConfigError);
    expect(decorate({ leaseMs: 10 })).toThrow(
      '@OncePerTick on Bad#job: leaseMs=10 is invalid: accepts an integer number of milliseconds from 100 to 86400000',
    );
    expect(decorate({ name: ' ' })).toThrow(
      '@OncePerTick on Bad#job: name=" " is invalid: accepts a string of 1 to 200 characters, not only white space',
    );
    expect(decorate({ every: 1 })).toThrow('@OncePerTick on Bad#job: unknown option every (accepted: name, maxClockSkewMs, leaseMs)');
  });

  it('fails a call on an instance Nest did not create, saying what to do', async () => {
    await expect(new Jobs().above()).rejects.toThrow(
      '@OncePerTick on Jobs#above: no TickRunner on this instance. Import SerializedModule.forRoot()',
    );
  });
});
