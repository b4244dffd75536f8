/**
 * A call that an interceptor has already handled, announced to the method wrapper
 * its decorator installed, so the two handle a request once between them.
 * `@Serialized` and `@Idempotent` both use it.
 *
 * On a method, such a decorator does two things: it wraps the method (so that a
 * direct call, from another provider or from BullMQ calling `process(job)`, is
 * handled too, its key read from the arguments) and it applies its interceptor
 * (which reads the key from the request). A request must be handled once, not
 * once by each, so:
 *
 * 1. The interceptor does its part (for `@Serialized`: resolves the key, takes the
 *    lock), then calls `next.handle()` in an async context that carries an
 *    `InterceptedCall` naming the function Nest is about to call —
 *    `ExecutionContext.getHandler()`, which is the wrapper itself.
 * 2. The wrapper, called by Nest, {@link InterceptedCall.claim claims} it: it
 *    names this very function and is unclaimed, so this is the call the
 *    interceptor already handled; the wrapper calls the original method as is. An
 *    intercepted call is claimed once: the same method called again from inside
 *    the handler is a direct call like any other.
 * 3. A second interceptor of the same kind on the same call (one registered as
 *    `APP_INTERCEPTOR` and the one the decorator applied) sees an intercepted call
 *    still {@link InterceptedCall.isPendingFor pending for} its handler and lets
 *    the call through: the key is resolved and the lock taken once.
 *
 * The async context belongs to the service of one app (`LockService`,
 * `IdempotencyService`): nothing here is module state that two apps could share.
 */
export class InterceptedCall {
  private claimed = false;

  /** @param handler the function Nest is about to call (`ExecutionContext.getHandler()`) */
  constructor(readonly handler: object) {}

  /** Whether `handler` is the call announced here and it has not run yet. */
  isPendingFor(handler: object): boolean {
    return !this.claimed && handler === this.handler;
  }

  /** True once, for the wrapper `handler` announced here; false otherwise. */
  claim(handler: object): boolean {
    if (!this.isPendingFor(handler)) return false;
    this.claimed = true;
    return true;
  }
}
