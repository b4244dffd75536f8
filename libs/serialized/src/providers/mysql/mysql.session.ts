import { ServerSession, type SessionLossListener, type StatementInFlight } from '../../internal/server-session.lifecycle';
import type { QueryWatchdog } from '../sessions/query.watchdog';
import type { SessionTokens } from '../sessions/session.tokens';
import type { MysqlConnectionLike, MysqlError } from './mysql-driver.loader';
import { RELEASE_LOCK, SESSION_ID, TRY_LOCK, WAIT_LOCK, type CounterStatements } from './mysql-lock.sql';

/** Who is told when a session ends while it holds a named lock. */
export type NamedLockHolder = SessionLossListener;

/** A lock statement's answer: `GET_LOCK`'s (1, 0 or `null`), and the fencing counter read right after it. */
export interface LockAnswer {
  readonly granted: 1 | 0 | null;
  readonly counter: bigint | undefined;
}

/** `RELEASE_LOCK`'s answer: 1 released, 0 another session holds it, `null` no such lock. */
export type ReleaseAnswer = 1 | 0 | null;

/**
 * One session of the MySQL lock pool: a mysql2 connection whose server session may
 * hold several named locks (MySQL ≥ 5.7.5, MariaDB ≥ 10.0.2). It watches its own
 * end — the socket's `end`/`error` (a `KILL`, a server restart, a reset path), a
 * statement unanswered past its bound — and tells the pool and every lock it holds,
 * once (the lifecycle `ServerSession` shares with the PostgreSQL driver). What is
 * MySQL's: its statements run one at a time in the order sent (mysql2 queues them),
 * and a session that ends answers its statements in flight itself.
 */
export class MysqlSession extends ServerSession<NamedLockHolder, QueryWatchdog> {
  /**
   * The statements in flight, oldest first (the server answers in order): each
   * one's deadline and how to fail it. mysql2 never calls a statement back once its
   * connection was destroyed (its `close` handler returns early while closing), so
   * a session that ends answers its statements itself.
   */
  private readonly inFlight: (StatementInFlight & { readonly fail: (reason: Error) => void })[] = [];

  constructor(
    private readonly connection: MysqlConnectionLike,
    /** The server's id of the session (`CONNECTION_ID()`), which `KILL QUERY` names. */
    readonly id: number,
    watchdog: QueryWatchdog,
    sessionTimeoutMs: number,
    private readonly counter: CounterStatements,
    /**
     * The block of fencing tokens the provider's last draw reserved, one for all its
     * sessions (`MysqlSessions.tokens`): a grant takes its next token on whichever
     * session it came.
     */
    private readonly tokens: SessionTokens,
  ) {
    super(watchdog, sessionTimeoutMs, 'MySQL');
    connection.on('error', (error) => this.kill(error));
    connection.on('end', () => this.kill(new Error('the connection to MySQL ended')));
  }

  /** Statements in flight. */
  get busy(): boolean {
    return this.inFlight.length > 0;
  }

  /**
   * `GET_LOCK(name, 0)`, and in the same round trip, once it has run, the fencing
   * counter's value (what a grant's token is checked against, see `grantToken`).
   */
  async tryLock(name: string): Promise<LockAnswer> {
    return this.lockAndRead(TRY_LOCK, [name], 0);
  }

  /**
   * `GET_LOCK(name, seconds)` (and the counter, as `tryLock`): 1 granted, 0 the
   * server's timeout ended the wait, `null` the wait was killed (`KILL QUERY`) or
   * failed. The statement may take up to `seconds` by design: only silence beyond
   * that counts as a lost session.
   */
  async waitLock(name: string, seconds: number): Promise<LockAnswer> {
    return this.lockAndRead(WAIT_LOCK, [name, seconds], seconds * 1000);
  }

  /** `RELEASE_LOCK(name)` and its answer, unchanged. */
  async releaseLock(name: string): Promise<ReleaseAnswer> {
    const [answer] = await this.query(RELEASE_LOCK, [name]);
    return answer === 1 ? 1 : answer === 0 ? 0 : null;
  }

  /**
   * The fencing token of a grant this session just got (its lock is held): the
   * next token of the provider's block while nobody drew since (the counter, read
   * after the grant, still ends at the block), otherwise a new block is drawn.
   * Either way it is larger than every token of an earlier holder of the key (see
   * `SessionTokens`, whose argument holds for one block per provider as for one per
   * session: the provider hands out its block's tokens in order, one at a time).
   */
  async grantToken(counterAfterGrant: bigint | undefined): Promise<bigint> {
    const offer = this.tokens.offer();
    // The counter as read after the grant, in the lock statement's round trip.
    if (offer && counterAfterGrant === BigInt(offer.drawn) + BigInt(this.tokens.block) - 1n) return BigInt(offer.token);
    const header = await this.run(this.counter.draw, [this.tokens.block]);
    // The counter now ends the block this draw reserved: (end - block, end].
    const first = BigInt(String((header as { insertId: number | string }).insertId)) - BigInt(this.tokens.block) + 1n;
    this.tokens.granted(first);
    return first;
  }

  /** Liveness: the session answers, and is still the one opened. */
  async ping(): Promise<void> {
    const [id] = await this.query(SESSION_ID, []);
    if (Number(id) !== this.id) {
      const error = new Error(`the MySQL session changed under the lock (connection ${this.id}, now ${String(id)})`);
      this.kill(error);
      throw error;
    }
  }

  protected oldestStatement(): StatementInFlight | undefined {
    return this.inFlight[0];
  }

  protected destroy(): void {
    this.connection.destroy();
  }

  /** COM_QUIT. */
  protected closePolitely(): Promise<void> {
    return new Promise<void>((resolve) => this.connection.end(() => resolve()));
  }

  /**
   * mysql2 never calls a statement back once its connection was destroyed: every
   * statement in flight fails with `reason` now (a late callback finds none).
   */
  protected abandonStatements(reason: Error): void {
    for (const statement of this.inFlight.splice(0)) {
      this.watchdog.finished();
      statement.fail(reason);
    }
  }

  /** Lets the process exit while this session only sits in the pool. */
  unref(): void {
    this.connection.stream?.unref?.();
  }

  ref(): void {
    this.connection.stream?.ref?.();
  }

  /**
   * The lock statement and the counter's read, sent as one multi-statement query:
   * the server runs them in order, so the read sees every draw committed before the
   * lock was granted. No extra round trip for the fencing token.
   */
  private async lockAndRead(sql: string, values: unknown[], serverWaitMs: number): Promise<LockAnswer> {
    const [locked, read] = (await this.run(`${sql}; ${this.counter.read}`, values, serverWaitMs)) as unknown[][][];
    const answer = locked?.[0]?.[0];
    const last = read?.[0]?.[0];
    return {
      granted: answer === 1 ? 1 : answer === 0 ? 0 : null,
      counter: last === undefined || last === null ? undefined : BigInt(String(last)),
    };
  }

  /** One statement → its first row (as an array). */
  async query(sql: string, values: unknown[], serverWaitMs = 0): Promise<unknown[]> {
    const rows = (await this.run(sql, values, serverWaitMs)) as unknown[][];
    return rows[0] ?? [];
  }

  /**
   * Runs one statement. Silence beyond `serverWaitMs` (how long the server may take
   * by design) plus `sessionTimeoutMs`, in watchdog time (our own stalls not
   * counted), ends the session: a slow answer is still an answer.
   */
  private run(sql: string, values: unknown[], serverWaitMs = 0): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<unknown>((resolve, reject) => {
      const statement = { deadline: this.watchdog.started(serverWaitMs + this.sessionTimeoutMs), fail: reject };
      this.inFlight.push(statement);
      this.connection.query({ sql, rowsAsArray: true }, values, (error: MysqlError | null, rows: unknown) => {
        // Answered already (the session ended first, see `failInFlight`).
        if (this.inFlight[0] !== statement) return;
        this.inFlight.shift();
        this.watchdog.finished();
        if (error) {
          if (error.fatal) this.kill(error);
          // A statement that failed because the session died reports why it died.
          return reject(this.dead ?? error);
        }
        // A reply read after the session ended grants nothing: the server freed its locks with it.
        if (this.dead) return reject(this.dead);
        resolve(rows);
      });
    });
  }
}
