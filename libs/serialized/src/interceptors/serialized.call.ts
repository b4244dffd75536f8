import type { CallHandler, ExecutionContext, Logger } from '@nestjs/common';
import type { Observer, Subscriber, Subscription, Unsubscribable } from 'rxjs';
import { escapeLockKeyPart } from '../key/lock-key.composer';
import { DONE } from '../internal/release.after';
import type { Lock } from '../lock.interface';
import type { HeldKey, LockService, LockSet } from '../lock.service';
import { joinedSet } from '../lock-set.hold';
import { InterceptedCall } from '../metadata/intercepted.call';
import { ClientGoneError, watchClientGone } from './client-gone.watch';
import type { SerializedRoutePlan } from './serialized-route.plan';

/** What the calls of one interceptor share. */
export interface SerializedCallHost {
  readonly lockService: LockService;
  readonly logger: Logger;
  /** The error as it goes on to the exception filters (and the outage log): see `SerializedInterceptor`. */
  toTransport(error: unknown, handler: string, held: boolean): unknown;
  /** A call that held its lock completed: the backend works. */
  recovered(): void;
}

/**
 * One subscription to a serialized handler: resolves the key, waits for the lock
 * (leaving the queue if the client goes), runs the handler holding it, and
 * releases it before the result goes out. It is also the subscription's teardown
 * (`unsubscribe`). One object with methods rather than a closure per step: this
 * runs on every request. What only a waiting call needs — the abort signal, the
 * watch on the client's connection, the options carrying the signal — is made
 * only when the key is not taken at once.
 */
export class SerializedCall implements Observer<unknown>, Unsubscribable {
  /** Aborts the wait; made when the call has to wait (an async key, or a key not free at once). */
  private waiting: AbortController | undefined;
  private stopWatching: () => void = noop;
  private held: HeldKey | undefined;
  private inner: Subscription | undefined;
  /** Ends a transaction-mode section whose subscriber went away (its transaction rolls back). */
  private abandon: ((reason: unknown) => void) | undefined;
  private done = false;
  private acquiring = true;

  constructor(
    private readonly host: SerializedCallHost,
    private readonly plan: SerializedRoutePlan,
    private readonly ctx: ExecutionContext,
    private readonly callHandler: CallHandler,
    private readonly subscriber: Subscriber<unknown>,
  ) {
    let value: string | readonly string[] | Promise<string | readonly string[]>;
    try {
      value = plan.resolveKey(ctx);
    } catch (error) {
      this.failed(error);
      return;
    }
    if (typeof value === 'string') {
      this.acquire(value);
      return;
    }
    this.wait();
    if (Array.isArray(value)) {
      this.acquireSet(value);
      return;
    }
    (value as Promise<string | readonly string[]>).then(
      (resolved) => (typeof resolved === 'string' ? this.acquire(resolved) : this.acquireSet(resolved)),
      (error: unknown) => this.failed(error),
    );
  }

  /** The subscriber's teardown: the client left, or the response is complete. */
  unsubscribe(): void {
    this.stopWatching();
    // Only a caller still waiting has anything to abort; an Error (and its stack) per request is not free.
    if (this.acquiring && this.waiting) this.waiting.abort(new ClientGoneError(this.plan.handler));
    this.inner?.unsubscribe();
    this.abandon?.(new ClientGoneError(this.plan.handler));
    this.finish(undefined);
  }

  // The handler's Observable, seen while holding the lock.
  next(result: unknown): void {
    this.subscriber.next(result);
  }

  error(error: unknown): void {
    if (this.done) return;
    this.finish(this.host.toTransport(error, this.plan.handler, true), true);
  }

  complete(): void {
    this.host.recovered();
    this.finish(undefined, false);
  }

  private clientGone(): void {
    this.host.logger.debug(`Client left while waiting (${this.plan.handler}); it leaves the queue`);
    this.waiting!.abort(new ClientGoneError(this.plan.handler));
  }

  /** The call is about to wait: from now a client that leaves aborts it (once only). */
  private wait(): AbortSignal {
    if (this.waiting) return this.waiting.signal;
    this.waiting = new AbortController();
    this.stopWatching = watchClientGone(this.ctx, () => this.clientGone());
    return this.waiting.signal;
  }

  private acquire(value: string): void {
    if (this.done) return; // unsubscribed while its key was being resolved
    const { plan } = this;
    const key = `${plan.scopePart}:${escapeLockKeyPart(value)}`;
    if (plan.runOptions.transaction) return this.runInTransaction(key);
    // A free key is taken synchronously: the handler runs without waiting for a promise of the
    // lock, and nothing that only a waiting call needs (signal, client watch, options) is made.
    // After an async key the call waits already: its signal goes along (a client gone meanwhile takes nothing).
    let options = this.waiting ? { ...plan.runOptions, signal: this.waiting.signal } : plan.runOptions;
    const now = this.host.lockService.acquireNow(key, options);
    if (now) return this.acquired(now);
    if (!this.waiting) options = { ...plan.runOptions, signal: this.wait() };
    // Validated already: the options when the decorator was applied, the key's value when it was read.
    this.host.lockService.acquireValidated(key, options).then(
      (held) => this.acquired(held),
      (error: unknown) => this.failed(error),
    );
  }

  /**
   * A key set (an array key, or a key function that returned an array): every key
   * taken together through `LockService.acquireSet` (one canonical order, one wait
   * budget, all or none). The call waits already (`wait()` was called).
   */
  private acquireSet(values: readonly string[]): void {
    if (this.done) return;
    const { plan } = this;
    const keys = values.map((value) => `${plan.scopePart}:${escapeLockKeyPart(value)}`);
    if (plan.runOptions.transaction) return this.runInTransaction(keys);
    this.host.lockService.acquireSet(keys, { ...plan.runOptions, signal: this.waiting!.signal }).then(
      (held) => this.acquired(held),
      (error: unknown) => this.failed(error),
    );
  }

  private acquired(held: HeldKey): void {
    this.acquiring = false;
    this.stopWatching();
    if (this.subscriber.closed || this.done) {
      void held.release();
      return;
    }
    this.held = held;
    this.inner = this.host.lockService.runHolding(
      held,
      () => this.callHandler.handle().subscribe(this),
      new InterceptedCall(this.ctx.getHandler()),
    );
  }

  /**
   * Transaction mode: the handler runs inside the transaction that holds the key,
   * and what it emits goes out only after the COMMIT (a response is never sent
   * for work that may still roll back).
   */
  private runInTransaction(key: string | readonly string[]): void {
    const values: unknown[] = [];
    const { lockService } = this.host;
    // A key set's section runs under its set (what `@SerializedLock()` reads), joined: the transaction ends it.
    const section = (taken: Lock | LockSet) =>
      new Promise<void>((resolve, reject) => {
        this.acquiring = false;
        this.stopWatching();
        if (this.subscriber.closed || this.done) return resolve();
        this.abandon = reject;
        const observer = { next: (value: unknown) => values.push(value), error: reject, complete: () => resolve() };
        const held = isLockSet(taken) ? joinedSet(taken) : { lock: taken, reentrant: true, release: () => DONE };
        this.inner = lockService.runHolding(
          held,
          () => this.callHandler.handle().subscribe(observer),
          new InterceptedCall(this.ctx.getHandler()),
        );
      });
    const options = { ...this.plan.runOptions, signal: this.wait() };
    const ran = typeof key === 'string' ? lockService.run(key, section, options) : lockService.run(key, section, options);
    ran.then(
      () => {
        this.abandon = undefined;
        if (this.done) return;
        for (const value of values) this.subscriber.next(value);
        this.complete();
      },
      (error: unknown) => {
        this.abandon = undefined;
        if (this.acquiring) this.failed(error);
        else this.error(error);
      },
    );
  }

  /** Key resolution or acquisition failed: the handler does not run. */
  private failed(error: unknown): void {
    this.acquiring = false;
    this.stopWatching();
    if (error instanceof ClientGoneError) return; // nobody is listening
    if (!this.subscriber.closed) this.subscriber.error(this.host.toTransport(error, this.plan.handler, false));
  }

  /**
   * Releases, then ends the subscriber (`failed` says how; `undefined` ends
   * nothing: the subscriber is gone). The release is issued before the response
   * goes out — queued on the backend connection, so a client's next request to this
   * instance waits for it to apply, and another instance finds the key free once the
   * backend applied it — but the response does not wait for its reply
   * (docs/semantics.md, "When run() resolves").
   */
  private finish(error: unknown, failed?: boolean): void {
    if (this.done) return;
    this.done = true;
    const held = this.held;
    this.held = undefined;
    if (held) void held.release();
    if (failed === undefined) return;
    if (failed) this.subscriber.error(error);
    else this.subscriber.complete();
  }
}

function noop(): void {}

function isLockSet(taken: Lock | LockSet): taken is LockSet {
  return Array.isArray(taken);
}
