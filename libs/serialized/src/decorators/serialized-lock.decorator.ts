import { createParamDecorator, Injectable, type PipeTransform } from '@nestjs/common';
import type { Lock } from '../lock.interface';
import { LockService, type LockSet } from '../lock.service';
import { SERIALIZED_LOCK_PARAMETER_METADATA } from '../serialized.constants';

/**
 * Gives a `@Serialized` handler its own lock: `key`, `fencingToken` (store it
 * with writes that a holder which lost its lock must not make), `signal` (aborts
 * when the lock is lost) and `extend()`.
 *
 * ```ts
 * @Post('users/:userId/resources')
 * @Serialized('userId')
 * create(@Param('userId') userId: string, @SerializedLock() lock: Lock) {
 *   return this.resources.create(userId, { fence: lock.fencingToken });
 * }
 * ```
 *
 * On a handler serialized on several keys at once (`@Serialized(['params.fromId',
 * 'params.toId'])`, or a key function returning an array) the parameter is the
 * set's `readonly Lock[]` (a `LockSet`), in the order of the keys, duplicates
 * collapsed; `locks.signal` aborts when any of them is lost.
 *
 * Service code called from the handler reaches the same lock with
 * `LockService.current()`. On a handler that is not serialized (no `@Serialized`,
 * or `@SkipSerialized()`) the app does not start: the error names `Class#method`.
 */
export function SerializedLock(): ParameterDecorator {
  const parameter = lockParameter(SerializedLockPipe);
  return (target: object, propertyKey: string | symbol | undefined, index: number) => {
    parameter(target, propertyKey, index);
    // Recorded on the method itself (method decorators copy it onto their wrappers), for the start-up check.
    const method = propertyKey === undefined ? undefined : (target as Record<string | symbol, unknown>)[propertyKey];
    if (typeof method === 'function') Reflect.defineMetadata(SERIALIZED_LOCK_PARAMETER_METADATA, index, method);
  };
}

// The parameter's value is whatever the pipe returns: the pipe is built by Nest, so it reaches this app's LockService.
const lockParameter = createParamDecorator(() => undefined);

/** Resolves `@SerializedLock()`: runs inside the handler's async context, where the interceptor holds the lock. @internal */
@Injectable()
export class SerializedLockPipe implements PipeTransform<unknown, Lock | LockSet> {
  constructor(private readonly lockService: LockService) {}

  transform(): Lock | LockSet {
    const lock = this.lockService.currentSet() ?? this.lockService.current();
    if (!lock) {
      throw new Error('@SerializedLock(): this call holds no lock; use it on a @Serialized handler (not one marked @SkipSerialized())');
    }
    return lock;
  }
}
