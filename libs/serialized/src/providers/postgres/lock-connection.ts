import type { Client, ClientConfig, QueryArrayConfig } from 'pg';
import type { DeadlineQueue } from '../../internal/deadline-queue';
import { sendCancelRequest } from './cancel-request';
import type { PgModule } from './pg-driver.loader';
import type { QueryWatchdog, Watched } from './query.watchdog';
import { SessionChangedError } from './session-changed.error';

/** How the lock sessions of one provider are opened. */
export interface LockSessionSettings {
  readonly pg: PgModule;
  /** Connection settings (URL or the app pool's options), without pool-only fields. */
  readonly config: ClientConfig;
  /** Shown in `pg_stat_activity`, so operators and tests can count lock sessions. */
  readonly applicationName: string;
  /** Bound on connect + session set-up. */
  readonly connectTimeoutMs: number;
  /**
   * How long an open session may leave a statement unanswered (beyond the time the
   * server may take by design, such as a lock wait) before it counts as lost.
   */
  readonly sessionTimeoutMs: number;
  /**
   * Server-side TCP keepalive (seconds) for idle, interval and 3 probes: the server
   * ends the session of a vanished client, and so frees its locks, within about a lease.
   */
  readonly keepaliveSeconds: number;
  /** The fencing sequence (quoted), checked for presence during set-up. */
  readonly sequence: string;
  /** Create the sequence when it is missing (off for roles that may not run DDL). */
  readonly createSchema: boolean;
}

/** Who is told when a session ends while it holds a lock. */
export interface SessionHolder {
  sessionLost(reason: Error): void;
}

/** The internals of `pg.Client` this file relies on (stable across pg 8). */
interface ClientInternals {
  processID: number | null;
  secretKey: number | null;
  host: string;
  port: number;
  connection?: { stream?: { destroy(): void } };
  ref?(): void;
  unref?(): void;
}

// Session settings applied once per connection. A role default must not cancel a
// long wait (statement_timeout), bound a wait we bound ourselves (lock_timeout), or
// end an idle session that holds a lock (idle_session_timeout, PG 14+). Settings the
// server does not know are skipped by the join, so one statement fits every version.
const SESSION_SETUP =
  'SELECT pg_backend_pid(), count(set_config(s.name, v.value, false)) FROM (VALUES ' +
  "('application_name', $1::text), ('statement_timeout', '0'), ('lock_timeout', '0'), " +
  "('idle_in_transaction_session_timeout', '0'), ('idle_session_timeout', '0'), " +
  "('tcp_keepalives_idle', $2::text), ('tcp_keepalives_interval', $2::text), ('tcp_keepalives_count', '3')" +
  ') AS v(name, value) JOIN pg_settings s ON s.name = v.name';
// The second statement proves the session is pinned (same pid as the first one).
const SESSION_CHECK = 'SELECT pg_backend_pid(), to_regclass($1) IS NOT NULL';
const PING: QueryArrayConfig = { text: 'SELECT pg_backend_pid()', rowMode: 'array' };

/** The outcome of opening a session. */
export interface OpenedSession {
  readonly connection: LockConnection;
  /** Whether the fencing sequence exists. */
  readonly sequencePresent: boolean;
}

/**
 * One session of the lock pool: a `pg.Client` whose server session may hold
 * advisory locks. It watches its own end (`error`/`end` events, a statement that
 * gets no answer in time) and tells the pool and the lock it holds, once.
 */
export class LockConnection implements Watched {
  /** The lock this session holds, if any; told when the session ends. */
  holder: SessionHolder | undefined;
  /** Why the session is gone; `undefined` while it is usable. */
  dead: Error | undefined;
  /** When it was last handed back to the pool (for idle reaping). */
  idleSince = 0;
  /** Whether the pool has it out (held, waiting or in use) rather than idle. @internal */
  out = false;
  // Deadlines of the statements in flight, oldest first (pg answers in order).
  private readonly deadlines: number[] = [];
  private deathListener: ((connection: LockConnection) => void) | undefined;

  private constructor(
    private readonly client: Client,
    /** The backend pid of the session, checked again by every statement that returns it. */
    readonly pid: number,
    private readonly watchdog: QueryWatchdog,
    private readonly sessionTimeoutMs: number,
  ) {
    watchdog.add(this);
  }

  /** Statements in flight (a liveness ping is skipped while one runs). */
  get busy(): boolean {
    return this.deadlines.length > 0;
  }

  /**
   * Connects, applies the session settings and checks that two statements run on
   * one server session. Rejects within `connectTimeoutMs`; the client is destroyed
   * on any failure.
   */
  static async open(settings: LockSessionSettings, deadlines: DeadlineQueue, watchdog: QueryWatchdog): Promise<OpenedSession> {
    const client = new settings.pg.Client({
      ...settings.config,
      application_name: settings.applicationName,
      connectionTimeoutMillis: settings.connectTimeoutMs,
      keepAlive: true,
    });
    let connection: LockConnection | undefined;
    // A client without an error listener crashes the process on a dropped socket.
    client.on('error', (error: Error) => connection?.kill(error));
    client.on('end', () => connection?.kill(new Error('the connection to PostgreSQL ended')));

    let timedOut = false;
    const deadline = deadlines.schedule(settings.connectTimeoutMs, () => {
      timedOut = true;
      destroySocket(client);
    });
    try {
      await client.connect();
      const setup = await client.query({
        text: SESSION_SETUP,
        values: [settings.applicationName, String(settings.keepaliveSeconds)],
        rowMode: 'array',
      });
      const check = await client.query({ text: SESSION_CHECK, values: [settings.sequence], rowMode: 'array' });
      const firstPid = Number(setup.rows[0][0]);
      const laterPid = Number(check.rows[0][0]);
      if (firstPid !== laterPid) throw new SessionChangedError(firstPid, laterPid);
      connection = new LockConnection(client, firstPid, watchdog, settings.sessionTimeoutMs);
      return { connection, sequencePresent: check.rows[0][1] === true };
    } catch (error) {
      destroySocket(client);
      if (timedOut && !(error instanceof SessionChangedError)) {
        throw new Error(`could not connect to PostgreSQL within ${settings.connectTimeoutMs} ms`, { cause: error });
      }
      throw error;
    } finally {
      deadlines.cancel(deadline);
    }
  }

  /** Tells `listener` (the pool) once when the session ends. */
  onDeath(listener: (connection: LockConnection) => void): void {
    this.deathListener = listener;
  }

  /**
   * Runs one statement and returns its first row. A statement with no answer
   * within `serverWaitMs` (how long the server may take by design: a lock wait
   * its `lock_timeout` ends) plus `sessionTimeoutMs` kills the connection. A slow
   * answer is still an answer: PostgreSQL keeps the session, and its locks,
   * however slow the path, so only silence that long counts as a lost session.
   */
  async query(config: QueryArrayConfig, serverWaitMs = 0): Promise<unknown[]> {
    if (this.dead) throw this.dead;
    this.deadlines.push(this.watchdog.started(serverWaitMs + this.sessionTimeoutMs));
    try {
      const result = await this.client.query(config);
      return result.rows[0] ?? [];
    } catch (error) {
      // A statement that failed because the session died reports why it died.
      throw this.dead ?? error;
    } finally {
      this.deadlines.shift();
      this.watchdog.finished();
    }
  }

  /** @internal Called by the watchdog: ends the session if its oldest statement is overdue. */
  checkOverdue(now: number): void {
    const deadline = this.deadlines[0];
    if (deadline === undefined || deadline > now || this.dead) return;
    // Timers run before I/O in a loop turn: the answer may already wait in the
    // socket. Look again once I/O had its turn.
    setImmediate(() => {
      if (this.deadlines[0] !== deadline || this.dead) return;
      this.kill(new Error(`PostgreSQL did not answer within sessionTimeoutMs (${this.sessionTimeoutMs} ms)`));
    });
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

  /** Ends the session at once; the server frees its locks as soon as it sees the socket close. */
  kill(reason: Error): void {
    if (this.dead) return;
    this.dead = reason;
    this.watchdog.delete(this);
    destroySocket(this.client);
    this.deathListener?.(this);
    const holder = this.holder;
    this.holder = undefined;
    holder?.sessionLost(reason);
  }

  /** Closes the session politely (Terminate message), or at once after `timeoutMs`. */
  async end(timeoutMs: number): Promise<void> {
    if (this.dead) return;
    this.dead = new Error('the lock connection was closed');
    this.watchdog.delete(this);
    this.holder = undefined;
    const timer = setTimeout(() => destroySocket(this.client), timeoutMs);
    timer.unref();
    try {
      await this.client.end();
    } catch {
      // Already gone: nothing left to close.
    } finally {
      clearTimeout(timer);
    }
  }

  /** Lets the process exit while this connection only sits in the pool. */
  unref(): void {
    (this.client as unknown as ClientInternals).unref?.();
  }

  ref(): void {
    (this.client as unknown as ClientInternals).ref?.();
  }
}

function destroySocket(client: Client): void {
  const stream = (client as unknown as ClientInternals).connection?.stream;
  if (stream) stream.destroy();
  else void client.end().catch(() => undefined);
}
