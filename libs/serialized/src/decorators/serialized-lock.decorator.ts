import { createParamDecorator, Injectable, type PipeTransform } from '@nestjs/common';
import type { Lock } from '../lock.interface';
import { LockService } from '../lock.service';

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
 * Service code called from the handler reaches the same lock with
 * `LockService.current()`. On a handler that is not serialized (no `@Serialized`,
 * or `@SkipSerialized()`) the call fails with an error saying so.
 */
export function SerializedLock(): ParameterDecorator {
  return lockParameter(SerializedLockPipe);
}

// The parameter's value is whatever the pipe returns: the pipe is built by Nest, so it reaches this app's LockService.
const lockParameter = createParamDecorator(() => undefined);

/** Resolves `@SerializedLock()`: runs inside the handler's async context, where the interceptor holds the lock. @internal */
@Injectable()
export class SerializedLockPipe implements PipeTransform<unknown, Lock> {
  constructor(private readonly lockService: LockService) {}

  transform(): Lock {
    const lock = this.lockService.current();
    if (!lock) {
      throw new Error('@SerializedLock(): this call holds no lock; use it on a @Serialized handler (not one marked @SkipSerialized())');
    }
    return lock;
  }
}
