import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  InMemoryLockProvider,
  LockService,
  Serialized,
  SerializedConfigError,
  SerializedModule,
  type RunOptions,
  type SerializedOptions,
} from 'nestjs-serialized';
import { deferred, sleep, waitFor } from '../support/timing';

/** The longest delay a Node.js timer takes; a longer one fires after 1 ms with a TimeoutOverflowWarning. */
const MAX_TIMER_MS = 2 ** 31 - 1;

describe('per-call options', () => {
  let provider: InMemoryLockProvider;
  let locks: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    locks = new LockService(provider);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await provider.close();
  });

  describe('a waitTimeoutMs beyond what a timer takes', () => {
    it.each([
      ['2^31 ms (24.9 days)', 2 ** 31],
      ['100 days', 100 * 24 * 3600_000],
      ['Number.MAX_SAFE_INTEGER', Number.MAX_SAFE_INTEGER],
    ])('%s: arms one timer (no spinning, no TimeoutOverflowWarning) and the waiter still gets the key', async (_name, waitTimeoutMs) => {
      const setTimeoutSpy = jest.spyOn(global, 'setTimeout');
      const holder = await provider.acquire('k');
      const settled = jest.fn();
      const waiting = provider.acquire('k', { waitTimeoutMs });
      waiting.then(settled, settled);
      await sleep(300);
      // The waiter's deadline is the only long timer (test helpers arm short ones). Armed beyond
      // MAX_TIMER_MS, Node fires it after 1 ms with a TimeoutOverflowWarning, and it is re-armed:
      // hundreds of arms in 300 ms. (Warnings are not observable from inside jest's sandbox, so
      // the delay itself is checked: one within the bound never warns.) 2^31 ms is 1 ms past the
      // bound: armed a few milliseconds after the call (a busy host), what is left is within it.
      const longTimers = setTimeoutSpy.mock.calls.filter(([, delay]) => (delay ?? 0) > 1000);
      expect(longTimers).toHaveLength(1);
      expect(longTimers[0][1]).toBeLessThanOrEqual(MAX_TIMER_MS);
      expect(longTimers[0][1]).toBeGreaterThan(MAX_TIMER_MS - 60_000);
      expect(settled).not.toHaveBeenCalled();
      expect(provider.timerArmed).toBe(true);

      await holder.release();
      const lock = await waiting;
      expect(lock.key).toBe('k');
      await lock.release();
      expect(provider.activeKeys).toBe(0);
      expect(provider.timerArmed).toBe(false);
    });

    it('through LockService.run and @Serialized-style options, a huge wait still ends in the key', async () => {
      const gate = deferred();
      const order: string[] = [];
      const first = locks.run('k', async () => {
        order.push('first');
        await gate.promise;
      });
      const second = locks.run('k', () => order.push('second'), { waitTimeoutMs: 2 ** 40, leaseMs: 2 ** 40, maxPending: Infinity });
      await sleep(50);
      expect(order).toEqual(['first']);
      gate.resolve();
      await Promise.all([first, second]);
      expect(order).toEqual(['first', 'second']);
    });
  });

  describe('invalid values are refused, naming the option and the caller', () => {
    const invalid: [string, RunOptions, RegExp][] = [
      ['a negative waitTimeoutMs', { waitTimeoutMs: -1 }, /waitTimeoutMs=-1/],
      ['a fractional waitTimeoutMs', { waitTimeoutMs: 1.5 }, /waitTimeoutMs=1\.5/],
      ['a NaN waitTimeoutMs', { waitTimeoutMs: NaN }, /waitTimeoutMs=NaN/],
      ['an infinite waitTimeoutMs', { waitTimeoutMs: Infinity }, /waitTimeoutMs=Infinity/],
      ['a waitTimeoutMs given as text', { waitTimeoutMs: '100' as unknown as number }, /waitTimeoutMs="100"/],
      ['a fractional leaseMs', { leaseMs: 1500.5 }, /leaseMs=1500\.5/],
      ['a NaN leaseMs', { leaseMs: NaN }, /leaseMs=NaN/],
      ['a negative leaseMs', { leaseMs: -30_000 }, /leaseMs=-30000/],
      ['a negative maxPending', { maxPending: -1 }, /maxPending=-1/],
      ['a fractional maxPending', { maxPending: 0.5 }, /maxPending=0\.5/],
      ['a NaN maxPending', { maxPending: NaN }, /maxPending=NaN/],
      ['an unknown mode', { mode: 'later' as never }, /mode="later"/],
    ];

    it.each(invalid)(
      'LockService.run with %s: a rejected promise (never a synchronous throw), and fn never runs',
      async (_name, options, option) => {
        const fn = jest.fn();
        let result!: Promise<unknown>;
        expect(() => {
          result = locks.run('k', fn, { ...options, handler: 'Billing#charge' });
        }).not.toThrow();
        const error = await result.then(
          () => undefined,
          (e: Error) => e,
        );
        expect(error).toBeInstanceOf(Error);
        expect(error!.message).toMatch(option);
        expect(error!.message).toContain('Billing#charge');
        expect(fn).not.toHaveBeenCalled();
        expect(provider.activeKeys).toBe(0);
      },
    );

    it.each(invalid.filter(([, options]) => !('mode' in options)))(
      'the provider itself, with %s: acquire and tryAcquire reject',
      async (_name, options, option) => {
        await expect(provider.acquire('k', options)).rejects.toThrow(option);
        await expect(provider.acquire('k', options)).rejects.toThrow('InMemoryLockProvider#acquire');
        await expect(provider.tryAcquire('k', options)).rejects.toThrow(option);
        expect(provider.activeKeys).toBe(0);
      },
    );

    it('LockService.acquire (the interceptor path) rejects too, naming the handler', async () => {
      await expect(locks.acquire('k', { leaseMs: 0.5, handler: 'Rewards#claim' })).rejects.toThrow(
        /leaseMs=0\.5.*Rewards#claim|Rewards#claim.*leaseMs=0\.5/,
      );
    });

    it('a bad option on a key already held by this context is refused as well', async () => {
      await locks.run('k', async () => {
        await expect(locks.run('k', () => 'nested', { waitTimeoutMs: -5 })).rejects.toThrow(/waitTimeoutMs=-5/);
      });
    });
  });

  describe('@Serialized options are checked when the decorator is applied', () => {
    const decorate = (options: SerializedOptions) => {
      class Billing {
        @Serialized('id', options)
        charge(): void {}
      }
      return Billing;
    };

    it.each([
      [{ waitTimeoutMs: 1.5 }, /waitTimeoutMs=1\.5/],
      [{ waitTimeoutMs: NaN }, /waitTimeoutMs=NaN/],
      [{ leaseMs: -1 }, /leaseMs=-1/],
      [{ maxPending: 2.5 }, /maxPending=2\.5/],
      [{ scope: '' }, /scope=""/],
      [{ scope: '   ' }, /scope=" {3}"/],
      [{ scope: 'a\ud800' }, /scope=/],
      [{ transform: 'Number' as never }, /transform="Number"/],
    ] as [SerializedOptions, RegExp][])('%j is a start-up error naming the option and Class#method', (options, option) => {
      expect(() => decorate(options)).toThrow(option);
      expect(() => decorate(options)).toThrow('Billing#charge');
    });

    it('huge values and an unbounded maxPending are accepted', () => {
      expect(() => decorate({ waitTimeoutMs: 2 ** 40, leaseMs: Number.MAX_SAFE_INTEGER, maxPending: Infinity })).not.toThrow();
    });

    it('a huge waitTimeoutMs on a route handler: a second request waits for the first, then runs', async () => {
      const gate = deferred();
      const runs: string[] = [];
      @Controller('huge')
      class HugeController {
        @Post(':id')
        @Serialized('id', { waitTimeoutMs: 2 ** 33, maxPending: Infinity })
        async handle(@Param('id') id: string) {
          runs.push(id);
          if (runs.length === 1) await gate.promise;
          return { n: runs.length };
        }
      }
      const moduleRef = await Test.createTestingModule({
        imports: [SerializedModule.forRoot({ driver: 'memory' })],
        controllers: [HugeController],
      }).compile();
      const app: INestApplication = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      try {
        const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
        const first = request(url)
          .post('/huge/x')
          .then((r) => r);
        await waitFor(() => runs.length === 1, 10_000, 'the first handler');
        const second = request(url)
          .post('/huge/x')
          .then((r) => r);
        // In the line for the key, behind the first: not run, and not timed out by its 2^33 ms.
        await waitFor(
          async () => (await app.get(LockService).inspect('HugeController.handle:x')).waitingHere === 1,
          10_000,
          'the second to wait',
        );
        expect(runs).toEqual(['x']);
        gate.resolve();
        expect([(await first).body.n, (await second).body.n]).toEqual([1, 2]);
      } finally {
        await app.close();
      }
    });
  });

  describe('module options use the same table', () => {
    it('a fractional or negative module option stops start-up naming it', async () => {
      const error = await Test.createTestingModule({
        imports: [SerializedModule.forRoot({ waitTimeoutMs: 1.5, leaseMs: -1, maxPending: NaN })],
      })
        .compile()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SerializedConfigError);
      expect((error as SerializedConfigError).problems).toEqual([
        expect.stringMatching(/^options\.leaseMs=-1 is invalid: accepts an integer number of milliseconds from 100 to 86400000/),
        expect.stringMatching(/^options\.waitTimeoutMs=1\.5 is invalid: accepts an integer number of milliseconds from 0 to 86400000/),
        expect.stringMatching(/^options\.maxPending=NaN is invalid: accepts an integer from 0 to 10000000/),
      ]);
    });
  });
});
