import { LockLostError } from '../../errors';
import { PEEK_SIGNAL } from '../../internal/lazy-signal';
import type { Lock } from '../../lock.interface';

/** A key held in this process. Nothing can take it away, so it never expires. */
export class InMemoryLock implements Lock {
  private released = false;
  private controller: AbortController | undefined;

  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    private readonly onRelease: (lock: InMemoryLock) => void,
  ) {}

  /** The signal if something asked for it (see `PEEK_SIGNAL`). */
  [PEEK_SIGNAL](): AbortSignal | undefined {
    return this.controller?.signal;
  }

  get signal(): AbortSignal {
    // Made on first use: most holders never look at it.
    return (this.controller ??= new AbortController()).signal;
  }

  async extend(): Promise<void> {
    if (this.released) throw new LockLostError(this.key, 'it was already released');
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.onRelease(this);
  }
}
