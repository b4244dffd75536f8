import { LockLostError } from '../../errors';
import { RELEASE_NOW, type ImmediateLock } from '../../internal/immediate-lock';
import { PEEK_SIGNAL } from '../../internal/lazy-signal';

/** A key held in this process. Nothing can take it away, so it never expires. */
export class InMemoryLock implements ImmediateLock {
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
    this[RELEASE_NOW]();
  }

  [RELEASE_NOW](): void {
    if (this.released) return;
    this.released = true;
    this.onRelease(this);
  }
}
