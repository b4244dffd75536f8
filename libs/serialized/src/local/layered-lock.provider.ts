import type { ProviderAcquireOptions } from '../acquire-options.interface';
import { validateAcquire } from '../config/acquire-options.validator';
import { keepingProcessAlive } from '../internal/process.keep-alive';
import type { Lock } from '../lock.interface';
import { LockProvider } from '../lock.provider';
import type { LockDoor } from './lock-door.interface';

/** What the base needs of a provider's local layer: the door, and the drain at shutdown. */
interface ProviderLines extends LockDoor {
  /** Refuses waiters and newcomers, then waits up to the grace period for the holders. */
  stopTaking(): Promise<unknown>;
}

/**
 * A provider built on the local layer: its public `acquire`/`tryAcquire` validate
 * the call once and hand it to its lines, which `LockService` reaches directly (see
 * `LockDoor`) after validating the call itself. The shutdown sequence is written
 * here once: drain (waiters and newcomers refused, holders given the grace period),
 * then the provider's own `closeBackend`, each run once however often it is asked.
 */
export abstract class LayeredLockProvider extends LockProvider {
  /**
   * The provider's local layer (its `LockLines`), typed by what the base needs: the
   * declarations of a provider then name none of its backend's types. @internal
   */
  abstract readonly lines: ProviderLines;
  private readonly acquireWhere: string;
  private readonly tryWhere: string;
  private draining: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

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

  /**
   * Nest's first shutdown hook: waiters and newcomers get `LockBackendError`, and
   * holders get up to `shutdownGraceMs` to release. The process stays alive meanwhile.
   */
  beforeApplicationShutdown(): Promise<void> {
    return (this.draining ??= keepingProcessAlive(async () => void (await this.drain())));
  }

  /** Nest's second shutdown hook: after the drain, the provider's own connections and timers close. */
  onApplicationShutdown(): Promise<void> {
    return (this.closing ??= keepingProcessAlive(async () => {
      await this.beforeApplicationShutdown();
      await this.closeBackend();
    }));
  }

  /** Shuts down outside Nest (both hooks, in order); a script may end with it. */
  async close(): Promise<void> {
    await this.onApplicationShutdown();
  }

  /** Whether closing began (`onApplicationShutdown` or `close`). */
  protected get closed(): boolean {
    return this.closing !== undefined;
  }

  /** The drain of `beforeApplicationShutdown` (a provider adds what its backend still settles). */
  protected drain(): Promise<unknown> {
    return this.lines.stopTaking();
  }

  /** What closes once the drain is over: the provider's connections and timers. */
  protected abstract closeBackend(): Promise<void>;
}
