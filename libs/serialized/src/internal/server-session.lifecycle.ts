/** Who is told when a session ends while it holds a lock on it. */
export interface SessionLossListener {
  sessionLost(reason: Error): void;
}

/**
 * What is watched for overdue statements (the shape `QueryWatchdog` calls). Why an
 * interface: the watchdog (providers/sessions/query.watchdog.ts) belongs to a
 * driver, and this shared file imports no driver; it sees sessions only so.
 */
export interface OverdueCheck {
  checkOverdue(now: number): void;
}

/** The watchdog a session registers with while it lives (providers/sessions/query.watchdog.ts). */
export interface SessionWatchdog {
  add(watched: OverdueCheck): void;
  delete(watched: OverdueCheck): void;
}

/** A statement on its way, as the lifecycle sees it: when its silence ends the session. */
export interface StatementInFlight {
  readonly deadline: number;
}

/**
 * The lifecycle every lock session shares, whatever its server (the PostgreSQL
 * driver's `LockSession`, the MySQL driver's `MysqlSession`): a session holds locks
 * on the server for holders of this process, and it ends once — killed (its socket
 * dropped, a statement unanswered past its bound, a session found changed) or closed
 * politely. A killed session tells its pool and every holder on it, at that moment
 * (docs/protocol.md, P6: the models' `learnDeath`); a closed one tells nobody (the
 * pool closes only sessions no holder is on). `dead` is written here alone.
 *
 * A driver supplies what is its server's: how the socket is destroyed or closed,
 * which statement is the oldest in flight, and what becomes of statements in flight
 * when the session ends.
 */
export abstract class ServerSession<H extends SessionLossListener, W extends SessionWatchdog = SessionWatchdog> implements OverdueCheck {
  private ended: Error | undefined;
  /** The locks this session holds for this process; each is told when the session is killed. */
  private readonly holders = new Set<H>();
  private deathListener: ((session: this) => void) | undefined;

  protected constructor(
    protected readonly watchdog: W,
    protected readonly sessionTimeoutMs: number,
    /** The server's name in messages ("PostgreSQL", "MySQL"). */
    private readonly serverName: string,
  ) {
    watchdog.add(this);
  }

  /** Why the session is gone; `undefined` while it is usable. */
  get dead(): Error | undefined {
    return this.ended;
  }

  /**
   * Registers `holder` as holding a lock on this session. A session that has
   * already ended tells it at once: it will not be told later.
   */
  hold(holder: H): void {
    if (this.ended) return holder.sessionLost(this.ended);
    this.holders.add(holder);
  }

  /** `holder` no longer holds its lock on this session (released, or handed to the next local holder). */
  letGo(holder: H): void {
    this.holders.delete(holder);
  }

  /** The holders on this session now (read-only: only hold, letGo and the session's end change them). */
  protected heldBy(): ReadonlySet<H> {
    return this.holders;
  }

  /** Tells `listener` (the pool) once when the session is killed. */
  onDeath(listener: (session: this) => void): void {
    this.deathListener = listener;
  }

  /** The watchdog's call: ends the session when its oldest statement is overdue. */
  checkOverdue(now: number): void {
    const oldest = this.oldestStatement();
    if (oldest === undefined || oldest.deadline > now || this.ended) return;
    // Timers run before I/O in a loop turn: the answer may already wait in the
    // socket. Look again once I/O had its turn.
    setImmediate(() => {
      if (this.oldestStatement() !== oldest || this.ended) return;
      this.kill(new Error(`${this.serverName} did not answer within sessionTimeoutMs (${this.sessionTimeoutMs} ms)`));
    });
  }

  /** Ends the session at once: the server frees its locks as soon as it sees the socket close. */
  kill(reason: Error): void {
    if (this.ended) return;
    this.ended = reason;
    this.watchdog.delete(this);
    this.destroy();
    this.abandonStatements(reason);
    this.deathListener?.(this);
    const holders = [...this.holders];
    this.holders.clear();
    for (const holder of holders) holder.sessionLost(reason);
  }

  /** Closes the session politely, or at once after `timeoutMs`. */
  async end(timeoutMs: number): Promise<void> {
    if (this.ended) return;
    const closed = new Error('the lock session was closed');
    this.ended = closed;
    this.watchdog.delete(this);
    this.holders.clear();
    this.abandonStatements(closed);
    let timer: NodeJS.Timeout | undefined;
    const forced = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.destroy();
        resolve();
      }, timeoutMs);
      timer.unref();
    });
    // A session already gone has nothing left to close.
    await Promise.race([this.closePolitely().catch(() => undefined), forced]);
    clearTimeout(timer);
  }

  /** The oldest statement in flight (the server answers in order), or none. */
  protected abstract oldestStatement(): StatementInFlight | undefined;

  /** Drops the socket at once. */
  protected abstract destroy(): void;

  /** The protocol's goodbye; resolves once the socket is closed. */
  protected abstract closePolitely(): Promise<void>;

  /** The session ended: what becomes of its statements in flight (a client that fails them itself leaves them). */
  protected abstract abandonStatements(reason: Error): void;
}
