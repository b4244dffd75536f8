import type { AsyncLocalStorage } from 'node:async_hooks';
import type { HeldKey, OwnedLock } from './lock.hold';
import type { Lock } from './lock.interface';
import type { InterceptedCall } from './metadata/intercepted.call';

/**
 * What `LockService` keeps in its AsyncLocalStorage: one object per section (a
 * `run`, a decorated call), linked to the sections around it. Each section adds
 * one object rather than copying a Map of every key held around it, which an
 * uncontended call would pay for on each acquisition.
 * @internal
 */
export interface LockContext {
  /** The lock this section acquired and lets nested calls join; `undefined` for a joined key, an intercepted call, a `reentrant: false` lock. */
  readonly held: OwnedLock | undefined;
  /**
   * The nearest enclosing section whose `held` was active when this one began.
   * Sections already released are skipped (see {@link outerOf}), so a chain
   * never grows with work that spawns work on and on.
   */
  readonly outer: LockContext | undefined;
  /** The section entered last: what `LockService.current` returns without a key. */
  readonly innermost: HeldKey;
  /** Set by `SerializedInterceptor` around the handler it calls (see `metadata/intercepted.call.ts`). */
  readonly interceptedCall: InterceptedCall | undefined;
}

/**
 * The lock on `key` that a call in `context` would join: the active lock
 * `context` and the sections around it acquired on `key` and let nested calls
 * join, or `undefined`. Released sections are passed over: one on `key` can only have
 * released sections on `key` around it (a section acquires its key only when
 * none around it holds it — otherwise it joins — and a released lock never
 * becomes active again), so the answer is the one of the innermost section on
 * `key`, without comparing keys of the released ones.
 */
export function joinableLockOn(context: LockContext | undefined, key: string): OwnedLock | undefined {
  for (let at = context; at !== undefined; at = at.outer) {
    const held = at.held;
    if (held !== undefined && held.active && held.lock.key === key) return held;
  }
  return undefined;
}

/** The innermost active lock of `context` and the sections around it (any key), or `undefined`. */
export function innermostActive(context: LockContext | undefined): Lock | undefined {
  for (let at = context; at !== undefined; at = at.outer) {
    if (at.held?.active === true) return at.held.lock;
  }
  return undefined;
}

/**
 * What a section begun in `context` links to: the nearest section with an active
 * lock. The released ones in between answer nothing ({@link joinableLockOn} and
 * {@link innermostActive} pass over them), and dropping them keeps a chain as
 * long as the sections still held, however long the work that spawned it.
 */
export function outerOf(context: LockContext | undefined): LockContext | undefined {
  let at = context;
  while (at !== undefined && at.held?.active !== true) at = at.outer;
  return at;
}

/**
 * Whether a section begun in `context`, once it has ended and released its lock,
 * may leave its own context in place of `context` for the code that called it.
 * It may when both answer alike: `context` is none, or a section of a lock it
 * acquired (active or not) and no interceptedCall. The ended section's context then
 * holds only its released lock, which answers for its key as "not held" — as
 * `context` does, since the section could not have acquired a key held around it —
 * and links to the same active sections. Not so under an intercepted call, or in a section
 * whose innermost lock is a joined or unjoinable one: there `current()` and
 * `interceptedCall()` would answer differently.
 */
export function mayOutlive(context: LockContext | undefined): boolean {
  return context === undefined || (context.interceptedCall === undefined && context.innermost === context.held);
}

/**
 * Runs `fn` with `context` as the store of `storage`, then puts back `prior`
 * (the store it had, which the caller read already): `AsyncLocalStorage.run`
 * without its second `getStore()`, rest arguments and `Reflect.apply`.
 */
export function runWithContext<R>(
  storage: AsyncLocalStorage<LockContext>,
  context: LockContext,
  prior: LockContext | undefined,
  fn: () => R,
): R {
  storage.enterWith(context);
  try {
    return fn();
  } finally {
    storage.enterWith(prior as LockContext);
  }
}
