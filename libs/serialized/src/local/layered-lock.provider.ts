import type { ProviderAcquireOptions } from '../acquire-options.interface';
import { validateAcquire } from '../config/acquire-options.validator';
import type { Lock } from '../lock.interface';
import { LockProvider } from '../lock.provider';
import type { LockDoor } from './lock-door.interface';

/**
 * A provider built on the local layer: its public `acquire`/`tryAcquire` validate
 * the call once and hand it to its lines, which `LockService` reaches directly (see
 * `LockDoor`) after validating the call itself.
 */
export abstract class LayeredLockProvider extends LockProvider {
  /**
   * The provider's local layer (its `LockLines`), typed by what the base needs: the
   * declarations of a provider then name none of its backend's types. @internal
   */
  abstract readonly lines: LockDoor;
  private readonly acquireWhere: string;
  private readonly tryWhere: string;

  /** @param name the provider's class name, in error messages */
  constructor(name: string) {
    super();
    this.acquireWhere = `${name}#acquire`;
    this.tryWhere = `${name}#tryAcquire`;
  }

  acquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock> {
    const invalid = validateAcquire(key, options, this.acquireWhere);
    if (invalid) return Promise.reject(invalid);
    return this.lines.acquire(key, options);
  }

  tryAcquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock | null> {
    const invalid = validateAcquire(key, options, this.tryWhere);
    if (invalid) return Promise.reject(invalid);
    return this.lines.tryAcquire(key, options);
  }
}
