import type { ProviderAcquireOptions } from '../acquire-options.interface';
import type { Lock } from '../lock.interface';
import type { LockProvider } from '../lock.provider';

/**
 * How `LockService` reaches a provider once it has validated a call itself: no
 * second validation, and the synchronous grant of a free in-process key. The
 * library's own providers expose it as their internal `lines` (`LockLines`
 * implements it); any other `LockProvider` is reached through its public methods.
 */
export interface LockDoor {
  acquire(key: string, options: ProviderAcquireOptions): Promise<Lock>;
  tryAcquire(key: string, options: ProviderAcquireOptions): Promise<Lock | null>;
  /** The key, held, when it is free in-process; `undefined` otherwise (never throws). */
  acquireNow(key: string, signal: AbortSignal | undefined, leaseMs: number | undefined): Lock | undefined;
  /**
   * A key set (distinct keys, canonical order) taken at once when the backend can
   * (`LockBackend.takeSet`) and none of its keys is held, asked for or waited for in
   * this process: the locks in that order, or `null` when a key was busy in the
   * backend (nothing held). `undefined` when not asked: the caller goes key by key.
   */
  takeSet?(keys: readonly string[], options: ProviderAcquireOptions): Promise<Lock[] | null> | undefined;
  /** Whether one key may have several holders at once (`concurrency` > 1, `shared`); a call asking for it elsewhere is refused. */
  readonly holdsTogether: boolean;
}

/** The door of `provider`: its `lines` when it has them, its public methods otherwise. */
export function doorOf(provider: LockProvider): LockDoor {
  const lines = (provider as { readonly lines?: LockDoor }).lines;
  if (lines) return lines;
  return {
    acquire: (key, options) => provider.acquire(key, options),
    tryAcquire: (key, options) => provider.tryAcquire(key, options),
    acquireNow: () => undefined,
    // Another provider reads the options it knows: its own business.
    holdsTogether: true,
  };
}
