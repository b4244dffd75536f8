import { Logger, type CallHandler, type ExecutionContext } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { LockService } from '../lock.service';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { SerializedCall, type SerializedCallHost } from './serialized.call';
import type { SerializedRoutePlan } from './serialized-route.plan';

describe('SerializedCall', () => {
  let provider: InMemoryLockProvider;
  let lockService: LockService;
  let host: SerializedCallHost;
  const plan: SerializedRoutePlan = { handler: 'T#h', resolveKey: () => 'a', scopePart: 's', runOptions: { handler: 'T#h' } };
  const handlerFn = (): void => undefined;
  const ctx = { getType: () => 'rpc', getHandler: () => handlerFn, getClass: () => Object } as unknown as ExecutionContext;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    lockService = new LockService(provider);
    host = { lockService, logger: new Logger('test'), toTransport: (error) => error, recovered: () => undefined };
  });

  afterEach(() => provider.beforeApplicationShutdown());

  /** A handler whose result the test completes; it records when it ran and which lock it saw. */
  function handler(events: string[], result: Subject<unknown>): CallHandler {
    return {
      handle: () => {
        events.push(`handler:${lockService.current()?.key}`);
        return result;
      },
    };
  }

  const call = (callHandler: CallHandler): Observable<unknown> =>
    new Observable<unknown>((subscriber) => new SerializedCall(host, plan, ctx, callHandler, subscriber).teardown);

  it('runs the handler on a free key before the subscription returns (no promise tick for the lock), and releases after it completes', async () => {
    const events: string[] = [];
    const result = new Subject<unknown>();
    queueMicrotask(() => events.push('microtask'));
    const done = new Promise<void>((resolve) => call(handler(events, result)).subscribe({ complete: resolve }));
    events.push('subscribed');
    expect(events).toEqual(['handler:s:a', 'subscribed']);
    expect(provider.acquireNow('s:a')).toBeUndefined(); // held while the handler runs
    result.complete();
    await done;
    const again = provider.acquireNow('s:a');
    expect(again).toBeDefined(); // released
    await again!.release();
  });

  it('queues a call on a held key: its handler runs only once the holder releases, with its own lock', async () => {
    const events: string[] = [];
    const holder = await provider.acquire('s:a');
    const result = new Subject<unknown>();
    const done = new Promise<void>((resolve) => call(handler(events, result)).subscribe({ complete: resolve }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual([]);
    await holder.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['handler:s:a']);
    result.complete();
    await done;
  });

  it('joins a caller whose async context holds the key (reentrancy), and leaves the key held by it', async () => {
    const events: string[] = [];
    const result = new Subject<unknown>();
    await lockService.run('s:a', async (outer) => {
      const done = new Promise<void>((resolve) => call(handler(events, result)).subscribe({ complete: resolve }));
      await new Promise((resolve) => setImmediate(resolve));
      expect(events).toEqual(['handler:s:a']);
      result.complete();
      await done;
      expect(lockService.current('s:a')).toBe(outer);
    });
  });
});
