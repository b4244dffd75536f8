import type { ProviderAcquireOptions } from '../acquire-options.interface';
import { validateAcquire } from '../config/acquire-options.validator';
import type { Lock } from '../lock.interface';
import { LockProvider } from '../lock.provider';
import type { LockLines } from './lock-lines';

/**
 * A provider built on the local layer: its public `acquire`/`tryAcquire` validate
 * the call once and hand it to its lines, which `LockService` reaches directly (see
 * `LockDoor`) after validating the call itself.
 */
export abstract class LayeredLockProvider<L extends Lock, K = never> extends LockProvider {
  /** The provider's local layer. @internal */
  abstract readonly lines: LockLines<L, K>;
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
