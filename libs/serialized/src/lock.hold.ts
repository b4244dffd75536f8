import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import { redactUrls } from './internal/secrets.redact';
import { DONE } from './internal/release.after';
import type { Lock } from './lock.interface';
import type { Span } from '@opentelemetry/api';
import type { SerializedMetrics } from './observability/serialized.metrics';
import type { SerializedTracing } from './observability/serialized.tracing';

/** A key held by the current call, as `LockService.acquire` returns it. */
export interface HeldKey {
  readonly lock: Lock;
  /** True when an enclosing call already held the key: `release()` then does nothing. */
  readonly reentrant: boolean;
  /** Releases the key (idempotent). Never throws: a failed release is logged; the lease ends it. */
  release(): Promise<void>;
}

/** A key this call acquired; it is also what nested calls find in the async context. @internal */
export class OwnedLock implements HeldKey {
  readonly reentrant = false;
  /** False once released: a nested call that outlives the holder must not count it as held. */
  active = true;
  /** When it was acquired (for the hold-time histogram; 0 without metrics). */
  private readonly since: number;
  /** Its `serialized.hold` span (tracing on). */
  private readonly span: Span | undefined;

  constructor(
    readonly lock: Lock,
    private readonly handler: string | undefined,
    private readonly logger: Logger,
    /** Whether calls inside the holder's async context may join it (`reentrant`). */
    readonly joinable: boolean,
    private readonly metrics?: SerializedMetrics,
    private readonly tracing?: SerializedTracing,
    /** Whether it holds the key `shared` (a nested call asking for it alone is an upgrade, refused). */
    readonly shared: boolean = false,
  ) {
    this.since = metrics ? performance.now() : 0;
    this.span = tracing?.holding(lock);
  }

  /**
   * The one release path. Returns {@link DONE} itself when the release is already
   * complete (an in-memory lock's release returns `DONE` itself), so callers on the fast path can
   * skip awaiting it; the promise never rejects.
   */
  release(): Promise<void> {
    if (!this.active) return DONE;
    this.active = false;
    // Read before letting go: a lease that ran out by the clock is found lost here (see `Lock.lost`).
    const lost = this.lock.lost;
    if (lost)
      this.logger.warn(
        `${describe(this.lock.key, this.handler)} was lost while its holder ran: ${redactUrls(String(lost.message ?? lost))}`,
      );
    // Counted as it is issued (run() does not wait for a release's reply).
    this.metrics?.released(this.lock.key, this.since, lost !== undefined);
    if (this.span) this.tracing!.released(this.span, this.lock.key, lost);
    try {
      const released = this.lock.release();
      if (released === DONE) return DONE;
      // A loss the release itself finds is logged by the provider, once, and counted when found.
      return released.then(
        () => {
          if (!lost && this.lock.lost) this.metrics?.lostAtRelease(this.lock.key);
        },
        (error: unknown) => this.couldNotRelease(error),
      );
    } catch (error) {
      this.couldNotRelease(error);
      return DONE;
    }
  }

  private couldNotRelease(error: unknown): void {
    // The work is done; failing the call now would lose its result. The lease ends the lock.
    this.logger.warn(
      `Could not release ${describe(this.lock.key, this.handler)}: ${redactUrls(String((error as Error)?.message ?? error))}`,
    );
  }
}

/** @internal */
export function activeLock(entry: OwnedLock | undefined): Lock | undefined {
  return entry?.active ? entry.lock : undefined;
}

function describe(key: string, handler: string | undefined): string {
  return handler ? `lock "${key}" (in ${handler})` : `lock "${key}"`;
}
