import type { ProviderAcquireOptions } from '../acquire-options.interface';
import type { Lock } from '../lock.interface';

/**
 * A provider that can grant a free key synchronously, with no I/O (the in-memory
 * one), lets `LockService.run` skip the promise chain of an acquisition and of its
 * release. That chain is most of an uncontended in-memory run on Node 20, where
 * every promise costs more once AsyncLocalStorage (reentrancy) is on.
 * @internal
 */
export const TAKE_NOW = Symbol('nestjs-serialized.takeNow');

/** Releases a lock taken with {@link TAKE_NOW}, synchronously. @internal */
export const RELEASE_NOW = Symbol('nestjs-serialized.releaseNow');

/** @internal */
export interface ImmediateLock extends Lock {
  [RELEASE_NOW](): void;
}

/** @internal */
export interface ImmediateLockProvider {
  /**
   * The key, held, if it is free and the provider takes it at once; otherwise
   * `undefined`, and the caller acquires it the usual way (which then waits,
   * rejects or reports the error). Never throws.
   */
  [TAKE_NOW](key: string, options: ProviderAcquireOptions): ImmediateLock | undefined;
}
