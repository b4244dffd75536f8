import type { QueryWatchdog, Watched } from './query.watchdog';

/**
 * The bound on opening a lock session, in watchdog time: a process that did not
 * run (a synchronous burst of acquisitions, a starved host) has not waited for
 * the server, and the reply may already sit in the socket (it is read once I/O
 * runs, before `destroy` on the next turn). Past the bound the connection is
 * destroyed and `timedOut` says why the opening failed. The drivers' own connect
 * timeouts are only far backstops.
 */
export class ConnectDeadline implements Watched {
  private settled = false;
  private overdue = false;
  private readonly deadline: number;

  constructor(
    private readonly watchdog: QueryWatchdog,
    timeoutMs: number,
    /** Ends the connection being opened. */
    private readonly destroy: () => void,
  ) {
    this.deadline = watchdog.started(timeoutMs);
    watchdog.add(this);
  }

  /** Whether the bound ended the opening. */
  get timedOut(): boolean {
    return this.overdue;
  }

  /** Watched: past the bound, the connection is destroyed (unless the opening settled first). */
  checkOverdue(now: number): void {
    if (this.settled || now < this.deadline) return;
    setImmediate(() => {
      if (this.settled) return;
      this.overdue = true;
      this.destroy();
    });
  }

  /** The session is open: what follows is not bounded by this deadline. */
  settle(): void {
    this.settled = true;
  }

  /** The opening is over, either way: the watchdog lets go of it. */
  end(): void {
    this.settled = true;
    this.watchdog.delete(this);
    this.watchdog.finished();
  }
}
