import { EventEmitter } from 'node:events';
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
    new Observable<unknown>((subscriber) => new SerializedCall(host, plan, ctx, callHandler, subscriber));

  it('runs the handler on a free key before the subscription returns (no promise tick for the lock), and releases after it completes', async () => {
    const events: string[] = [];
    const result = new Subject<unknown>();
    queueMicrotask(() => events.push('microtask'));
    const done = new Promise<void>((resolve) => call(handler(events, result)).subscribe({ complete: resolve }));
    events.push('subscribed');
    expect(events).toEqual(['handler:s:a', 'subscribed']);
    expect(provider.lines.acquireNow('s:a', undefined, undefined)).toBeUndefined(); // held while the handler runs
    result.complete();
    await done;
    const again = provider.lines.acquireNow('s:a', undefined, undefined);
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
  /** An HTTP context whose response records the listeners put on it; `gone()` closes the connection unfinished. */
  function httpCtx() {
    const response = Object.assign(new EventEmitter(), { writableFinished: false });
    const request = { socket: { destroyed: false } };
    const context = {
      getType: () => 'http',
      getHandler: () => handlerFn,
      getClass: () => Object,
      switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }),
    } as unknown as ExecutionContext;
    const watched: string[] = [];
    response.on('newListener', (event: string) => watched.push(event));
    return { context, response, watched, gone: () => response.emit('close') };
  }

  it('watches the client only while waiting: none for a free key, a watch removed once a held key is acquired', async () => {
    const { context, response, watched } = httpCtx();
    const events: string[] = [];
    const free = new Subject<unknown>();
    const done = new Promise<void>((resolve) =>
      new Observable<unknown>((subscriber) => new SerializedCall(host, plan, context, handler(events, free), subscriber)).subscribe({
        complete: resolve,
      }),
    );
    expect(watched).toEqual([]); // taken at once: the connection was never watched
    free.complete();
    await done;

    const holder = await provider.acquire('s:a');
    const queued = new Subject<unknown>();
    const second = new Promise<void>((resolve) =>
      new Observable<unknown>((subscriber) => new SerializedCall(host, plan, context, handler(events, queued), subscriber)).subscribe({
        complete: resolve,
      }),
    );
    expect(watched).toEqual(['close']); // waiting: a client that leaves leaves the queue
    expect(response.listenerCount('close')).toBe(1);
    await holder.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(response.listenerCount('close')).toBe(0);
    expect(events).toEqual(['handler:s:a', 'handler:s:a']);
    queued.complete();
    await second;
  });

  it('takes nothing for a client that left while its key was being resolved (async key)', async () => {
    const { context, gone } = httpCtx();
    let resolveKey!: (key: string) => void;
    const asyncPlan: SerializedRoutePlan = { ...plan, resolveKey: () => new Promise<string>((resolve) => (resolveKey = resolve)) };
    const events: string[] = [];
    const errors: unknown[] = [];
    new Observable<unknown>(
      (subscriber) => new SerializedCall(host, asyncPlan, context, handler(events, new Subject()), subscriber),
    ).subscribe({
      error: (error: unknown) => errors.push(error),
    });
    gone();
    resolveKey('a');
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual([]); // the handler never ran
    expect(errors).toEqual([]); // nobody is listening
    const free = provider.lines.acquireNow('s:a', undefined, undefined);
    expect(free).toBeDefined(); // and the key was not taken
    await free!.release();
  });
});
