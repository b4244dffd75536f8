import { LockBackendError } from '../../errors';
import type { DeadlineQueue } from '../../internal/deadline.queue';
import { redactUrls } from '../../internal/secrets.redact';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { LockSessionPool } from '../sessions/lock-session.pool';
import { QueryWatchdog } from '../sessions/query.watchdog';
import { SessionTokens } from '../sessions/session.tokens';
import { loadMysqlDriver } from './mysql-driver.loader';
import { counterStatements } from './mysql-lock.sql';
import {
  fencingTableOf,
  mysqlConnectionConfig,
  mysqlPoolSizeOf,
  type MysqlLockProviderOptions,
  type MysqlSessionTimings,
} from './mysql-lock-provider.options';
import type { MysqlSession } from './mysql.session';
import { createFencingTable, MYSQL_TOKEN_BLOCK, openMysqlSession, type MysqlSessionSettings } from './mysql-session.opener';
import { killQuery } from './query.killer';

/**
 * The database side of one MySQL provider: how its lock sessions are opened, the
 * pool they live in (the PostgreSQL driver's pool: shared uses for tries, holds and
 * releases, a session of its own for a blocking wait), the watchdog that bounds
 * every statement, and how a wait is killed. Knows nothing of keys or holders.
 */
export class MysqlSessions {
  readonly pool: LockSessionPool<MysqlSession>;
  readonly settings: MysqlSessionSettings;
  readonly connectTimeoutMs: number;
  private readonly watchdog = new QueryWatchdog(250);
  /**
   * The fencing tokens the last draw reserved, one block for every session of the
   * provider: a block per session would be drawn again whenever grants move between
   * sessions (as they do when a release is still in flight on one), and a draw is an
   * `UPDATE` whose commit waits for the server's log flush.
   */
  private readonly tokens = new SessionTokens();
  // The fencing table is checked once per provider, on its first session (again after a failure).
  private prepared: Promise<void> | undefined;

  /** @throws Error when `mysql2` is not installed, or an option is invalid */
  constructor(options: MysqlLockProviderOptions, timings: MysqlSessionTimings, deadlines: DeadlineQueue) {
    const mysql = loadMysqlDriver();
    this.tokens.sized(MYSQL_TOKEN_BLOCK);
    this.connectTimeoutMs = options.connectTimeoutMs ?? SERIALIZED_DEFAULTS.connectTimeoutMs;
    const table = fencingTableOf(options);
    this.settings = {
      mysql,
      config: mysqlConnectionConfig(options),
      connectTimeoutMs: this.connectTimeoutMs,
      sessionTimeoutMs: timings.sessionTimeoutMs,
      serverIdleSeconds: timings.serverIdleSeconds,
      table,
      counter: counterStatements(table),
      createSchema: options.createSchema ?? true,
    };
    this.pool = new LockSessionPool<MysqlSession>(
      {
        size: mysqlPoolSizeOf(options),
        open: () => openMysqlSession(this.settings, this.watchdog, this.tokens, (session) => this.prepare(session)),
        idleTimeoutMs: options.idleTimeoutMs ?? SERIALIZED_DEFAULTS.mysqlIdleTimeoutMs,
        retryAfterFailureMs: Math.min(1000, this.connectTimeoutMs),
        closeTimeoutMs: this.connectTimeoutMs,
      },
      deadlines,
    );
  }

  /** Whether the watchdog's timer runs (none while no statement does). */
  get armed(): boolean {
    return this.watchdog.armed;
  }

  /** Ends the statement `session` runs (a lock wait), from a connection of its own. */
  kill(session: MysqlSession): Promise<void> {
    return killQuery(this.settings, session.id, this.connectTimeoutMs);
  }

  /** The transport-neutral error for a database that cannot be used (credentials in URLs redacted). */
  backendError(key: string | undefined, cause: unknown): LockBackendError {
    const reason = redactUrls(cause instanceof Error ? cause.message : String(cause));
    return new LockBackendError(`MySQL cannot be used for locks: ${reason}`, { key, cause });
  }

  private prepare(session: MysqlSession): Promise<void> {
    const prepared = (this.prepared ??= createFencingTable(session, this.settings));
    return prepared.catch((error: unknown) => {
      if (this.prepared === prepared) this.prepared = undefined;
      throw error;
    });
  }
}
