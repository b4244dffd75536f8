import { performance } from 'node:perf_hooks';
import { LockLostError } from '../errors/lock-lost.error';
import { DONE } from '../internal/release.after';
import type { Lock } from '../lock.interface';

/**
 * A lock held by a database transaction: COMMIT or ROLLBACK is its release, so
 * `release()` and `extend()` resolve at once and do nothing. Lost when the
 * transaction's connection ends while it is held.
 */
export class TransactionLock implements Lock {
  private controller: AbortController | undefined;
  private lostError: LockLostError | undefined;
  /** `performance.now()` when the server granted it (`LockService.inspect`'s `heldForMs`). */
  readonly acquiredAt = performance.now();

  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    /** Server process of the transaction (what `pg_terminate_backend` takes). */
    readonly backendPid: number,
    /** True when the section joined a transaction begun outside it: the lock stays held until that one ends. */
    readonly joined: boolean,
    /** Held shared (`pg_advisory_xact_lock_shared`), beside other shared holders. */
    readonly shared: boolean,
  ) {}

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.lostError && !this.controller.signal.aborted) this.controller.abort(this.lostError);
    return this.controller.signal;
  }

  get lost(): LockLostError | undefined {
    return this.lostError;
  }

  extend(): Promise<void> {
    return DONE;
  }

  release(): Promise<void> {
    return DONE;
  }

  /** The transaction's connection ended while held. */
  markLost(reason: string, cause?: unknown): void {
    if (this.lostError) return;
    this.lostError = new LockLostError(this.key, reason, cause);
    this.controller?.abort(this.lostError);
  }
}
