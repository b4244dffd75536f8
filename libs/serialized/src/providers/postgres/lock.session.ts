import type { Client, QueryArrayConfig } from 'pg';
import { ServerSession, type SessionLossListener, type StatementInFlight } from '../../internal/server-session.lifecycle';
import { sendCancelRequest } from './cancel.request';
import type { QueryWatchdog } from '../sessions/query.watchdog';
import type { LockStatements } from './postgres-lock.statements';
import { SessionChangedError } from './session-changed.error';
import { GIVE_BACK_IF_HELD, PING, SESSION_AUDIT } from './lock-session.sql';
import { destroySocket, type ClientInternals } from './pg-client.internals';
import { StatementBatch } from './statement.batch';
import { SessionClaims } from './session.claims';
import { SessionTokens } from '../sessions/session.tokens';

/** Who is told when a session ends while it holds a lock. */
export interface SessionHolder extends SessionLossListener {
  /** The advisory lock key it holds on the session (decimal). */
  readonly lockKey: string;
}

/** An advisory lock the server showed on a session that nobody in this process stands behind (given back by the audit). */
export interface UnownedLock {
  readonly pid: number;
  readonly lockKey: string;
  /** The key it was claimed for, when a statement of this process took it. */
  readonly key: string | undefined;
}

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * One session of the lock pool: a `pg.Client` whose server session may hold
 * advisory locks (several at once). It watches its own end (`error`/`end` events,
 * a statement that gets no answer in time) and tells the pool and every lock it
 * holds, once (the lifecycle `ServerSession` shares with the MySQL driver). What is
 * PostgreSQL's: statements queue here (pg 8 deprecates queueing in the client),
 * batching, the session audit and the cancel request.
 */
export class LockSession extends ServerSession<SessionHolder, QueryWatchdog> {
  /** The fencing tokens its last `nextval` reserved, for its grants and local hand-offs. */
  readonly tokens = new SessionTokens();
  // What the session holds by this process's statements (written only by the lock statements below).
  private readonly claims = new SessionClaims();
  private auditing = false;
  // The statements in flight, oldest first (pg answers in order).
  private readonly inFlight: StatementInFlight[] = [];
  private tail: Promise<void> = Promise.resolve();
  private batches: { tries: StatementBatch; unlocks: StatementBatch } | undefined;

  constructor(
    private readonly client: Client,
    /** The backend pid of the session, checked again by every statement that returns it. */
    readonly pid: number,
    watchdog: QueryWatchdog,
    sessionTimeoutMs: number,
  ) {
    super(watchdog, sessionTimeoutMs, 'PostgreSQL');
  }

  /** Statements in flight (a liveness ping is skipped while one runs). */
  get busy(): boolean {
    return this.inFlight.length > 0;
  }

  /**
   * `pg_try_advisory_lock` (and the token) for `lockKey`, batched with other keys'
   * tries → [token or null, pid]. A reply read after the session ended grants
   * nothing (it rejects with why the session ended): the server freed the lock with
   * the session, and another session may hold it by now.
   */
  async tryLock(statements: LockStatements, lockKey: string, key: string): Promise<unknown[]> {
    this.claims.claim(lockKey, key);
    // An error leaves the claim: the caller gives the key back (unlock) or ends the session.
    const row = await (this.batches ??= batchesOf(this, statements)).tries.run(lockKey);
    if (row[0] === null || row[0] === undefined) this.claims.drop(lockKey);
    if (this.dead) throw this.dead;
    return row;
  }

  /**
   * The blocking wait: `pg_advisory_lock` bounded on the server by `lock_timeout`
   * (`serverWaitMs`) → [token, pid]. PostgreSQL may end the wait with "lock
   * timeout" (55P03) although it granted the lock in that instant — the timeout's
   * interrupt stays pending after the grant, and a session-level lock outlives the
   * statement — so a timed-out wait gives back whatever it took before it rejects;
   * the session is then clean for its next use. A session where that cannot be made
   * sure of is ended.
   */
  async lockWait(statements: LockStatements, lockKey: string, key: string, serverWaitMs: number): Promise<unknown[]> {
    this.claims.claim(lockKey, key);
    let row: unknown[];
    try {
      row = await this.query(statements.lock(lockKey, `${serverWaitMs}ms`), serverWaitMs);
    } catch (error) {
      if ((error as { code?: string })?.code === LOCK_NOT_AVAILABLE && !this.dead) await this.giveBackAfterTimeout(lockKey, error as Error);
      throw error;
    }
    if (this.dead) throw this.dead;
    return row;
  }

  /** `pg_advisory_unlock` of `lockKey`, batched with other keys' unlocks → [whether it was held]. */
  async unlock(statements: LockStatements, lockKey: string): Promise<unknown[]> {
    this.claims.unlocking(lockKey);
    try {
      const row = await (this.batches ??= batchesOf(this, statements)).unlocks.run(lockKey);
      // Unlocked, or it was not held: the session holds it no more either way.
      this.claims.drop(lockKey);
      return row;
    } finally {
      this.claims.unlocked(lockKey);
    }
  }

  /** Strict local hand-off: unlocks only if another session waits → [true/false as unlock, or null: kept]. */
  async unlockIfWaited(statements: LockStatements, lockKey: string): Promise<unknown[]> {
    this.claims.unlocking(lockKey);
    try {
      const row = await this.query(statements.unlockIfWaited(lockKey));
      if (row[0] !== null && row[0] !== undefined) this.claims.drop(lockKey);
      return row;
    } finally {
      this.claims.unlocked(lockKey);
    }
  }

  /** The lock keys held on this session by holders of this process (the session audit counts them as owned). */
  heldLockKeys(): Set<string> {
    const keys = new Set<string>();
    for (const holder of this.heldBy()) keys.add(holder.lockKey);
    return keys;
  }

  /**
   * The session audit, which is also its liveness check: asks the server which
   * advisory locks the session holds and gives back, at once, each one that no claim
   * of this process stands behind — taken by no statement of ours, or claimed by one
   * whose owner is gone (`owners`, asked when the audit is sent, says which claimed
   * keys someone still holds, waits for or hands on). Resolves with what it gave
   * back. A session that turns out not to be the one it was opened on is ended.
   */
  async audit(owners: () => (lockKey: string) => boolean): Promise<UnownedLock[]> {
    if (this.dead || this.auditing) return [];
    this.auditing = true;
    let owned = new Set<string>();
    let claimed = new Set<string>();
    try {
      const [row] = await this.queryRows(() => {
        // Read when the audit goes on the wire: every statement before it has run on the server, none after it.
        owned = this.claims.owned(owners());
        claimed = this.claims.keys();
        return SESSION_AUDIT;
      });
      const pid = Number(row?.[0]);
      if (pid !== this.pid) {
        const error = new SessionChangedError(this.pid, pid);
        this.kill(error);
        throw error;
      }
      const unowned: UnownedLock[] = [];
      for (const lockKey of (row[1] as string[] | null) ?? []) {
        if (owned.has(lockKey)) continue;
        unowned.push({ pid, lockKey, key: this.claims.nameOf(lockKey) });
        await this.query({ text: 'SELECT pg_advisory_unlock($1::bigint)', values: [lockKey], rowMode: 'array' });
        // A claim nobody stood behind ends with it; a lock nobody claimed leaves later claims alone.
        if (claimed.has(lockKey)) this.claims.drop(lockKey);
      }
      return unowned;
    } finally {
      this.auditing = false;
    }
  }

  /**
   * Runs one statement and returns its first row. A statement with no answer
   * within `serverWaitMs` (how long the server may take by design: a lock wait
   * its `lock_timeout` ends) plus `sessionTimeoutMs` kills the connection. A slow
   * answer is still an answer: PostgreSQL keeps the session, and its locks,
   * however slow the path, so only silence that long counts as a lost session.
   */
  async query(config: QueryArrayConfig, serverWaitMs = 0): Promise<unknown[]> {
    return (await this.queryRows(config, serverWaitMs))[0] ?? [];
  }

  /**
   * Like `query`, with every row. `config` may be made when the statement's turn
   * comes (a batch that gathers what queued up behind the statement in flight).
   */
  async queryRows(config: QueryArrayConfig | (() => QueryArrayConfig), serverWaitMs = 0): Promise<unknown[][]> {
    if (this.dead) throw this.dead;
    // Several uses share a session: statements queue here, one on the wire at a
    // time (pg 8 deprecates queueing inside the client).
    const queued = this.inFlight.length > 0;
    this.inFlight.push({ deadline: this.watchdog.started(serverWaitMs + this.sessionTimeoutMs) });
    const run = queued ? this.tail.then(() => this.send(config)) : this.send(config);
    this.tail = run.then(noop, noop);
    try {
      return (await run).rows;
    } catch (error) {
      // A statement that failed because the session died reports why it died.
      throw this.dead ?? error;
    } finally {
      this.inFlight.shift();
      this.watchdog.finished();
    }
  }

  private send(config: QueryArrayConfig | (() => QueryArrayConfig)): Promise<{ rows: unknown[][] }> {
    if (this.dead) return Promise.reject(this.dead);
    return this.client.query(typeof config === 'function' ? config() : config);
  }

  /** After a timed-out wait: unlocks `lockKey` if the server granted it after all; a session left in doubt is ended. */
  private async giveBackAfterTimeout(lockKey: string, timeout: Error): Promise<void> {
    try {
      await this.query({ name: 'nestjs-serialized:give-back', text: GIVE_BACK_IF_HELD, values: [lockKey], rowMode: 'array' });
      this.claims.drop(lockKey);
    } catch (error) {
      this.kill(
        new Error(`could not make sure a timed-out lock wait left nothing behind (${(error as Error)?.message ?? error})`, {
          cause: timeout,
        }),
      );
    }
  }

  /**
   * Checks that the session is alive and still the one it was opened on. Kills
   * the connection (and so tells its holder) when it is not.
   */
  async ping(): Promise<void> {
    const row = await this.query(PING);
    const pid = Number(row[0]);
    if (pid !== this.pid) {
      const error = new SessionChangedError(this.pid, pid);
      this.kill(error);
      throw error;
    }
  }

  /** Asks the server to cancel the running statement (best effort, no pool slot). */
  cancel(timeoutMs: number): Promise<void> {
    const { host, port, processID, secretKey } = this.client as unknown as ClientInternals;
    if (processID === null || secretKey === null) return Promise.resolve();
    return sendCancelRequest({ host, port, processID, secretKey }, timeoutMs);
  }

  protected oldestStatement(): StatementInFlight | undefined {
    return this.inFlight[0];
  }

  protected destroy(): void {
    destroySocket(this.client);
  }

  /** The Terminate message. */
  protected closePolitely(): Promise<void> {
    return this.client.end();
  }

  /** pg fails the statements of a client whose socket closed: nothing to do here. */
  protected abandonStatements(): void {}

  /** Lets the process exit while this connection only sits in the pool. */
  unref(): void {
    (this.client as unknown as ClientInternals).unref?.();
  }

  ref(): void {
    (this.client as unknown as ClientInternals).ref?.();
  }
}

function noop(): void {}

function batchesOf(session: LockSession, statements: LockStatements): { tries: StatementBatch; unlocks: StatementBatch } {
  return {
    tries: new StatementBatch(session, (key) => statements.tryLock(key, session.tokens.offer()), statements.tryLockMany),
    unlocks: new StatementBatch(session, statements.unlock, statements.unlockMany),
  };
}
