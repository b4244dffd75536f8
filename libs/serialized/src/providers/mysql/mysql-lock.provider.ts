import { validateProviderOptions } from '../../config/provider-options.validator';
import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import type { KeyInspector } from '../../inspect/key-inspector.interface';
import { MysqlLockInspector } from './mysql-lock.inspector';
import { mysqlProviderOptions } from '../../config/provider-options.mapper';
import { LockBackendError } from '../../errors';
import { DeadlineQueue } from '../../internal/deadline.queue';
import { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import { redactUrls } from '../../internal/secrets.redact';
import { pingLockPool } from '../sessions/lock-pool.health';
import { LayeredLockProvider } from '../../local/layered-lock.provider';
import { LockLines } from '../../local/lock.lines';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { MysqlBackend } from './mysql.backend';
import type { MysqlLock } from './mysql.lock';
import { mysqlLockName } from './mysql-lock.name';
import { mysqlTimings, type MysqlLockProviderOptions } from './mysql-lock-provider.options';
import { MysqlSessions } from './mysql.sessions';

export type { MysqlLockProviderOptions } from './mysql-lock-provider.options';

/**
 * Locks shared by every process using one MySQL (≥ 5.7.5) or MariaDB (≥ 10.0.2)
 * server: named locks (`GET_LOCK` / `RELEASE_LOCK`) on a small pool of connections
 * the library owns.
 *
 * Two levels: callers of one key first queue in this process (strict FIFO), and
 * only the head tries the key on the server (`GET_LOCK(name, 0)` on a session that
 * other keys' locks share). Only when another session holds the key does the head
 * take a session of its own and wait in the server, bounded there and killed at the
 * budget's end. A held lock costs no connection of its own; at most one connection
 * per key and process waits.
 *
 * Held sessions are pinged; a session that ends (`KILL`, closed socket, server
 * restart, or a path silent for `sessionTimeoutMs`) aborts the `signal` of every
 * lock it held with `LockLostError`. Fencing tokens come from a one-row counter
 * table, drawn in blocks. See docs/providers/mysql.md.
 */
export class MysqlLockProvider extends LayeredLockProvider implements BeforeApplicationShutdown, OnApplicationShutdown {
  readonly keyPrefix: string;
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  // One timer queue for the local waiters, the pool's queue and the server waits' deadlines.
  private readonly deadlines = new DeadlineQueue();
  private readonly sessions: MysqlSessions;
  private readonly backend: MysqlBackend;
  /** @internal */
  readonly lines: LockLines<MysqlLock>;
  /** `LockService.inspect`: the local layer, `IS_USED_LOCK` and the server's waiting sessions. @internal */
  readonly inspector: KeyInspector;

  /** @throws Error when `mysql2` is not installed, or an option is invalid */
  constructor(options: MysqlLockProviderOptions = {}) {
    super('MysqlLockProvider');
    validateProviderOptions('MysqlLockProvider', options);
    this.keyPrefix = options.keyPrefix ?? SERIALIZED_DEFAULTS.keyPrefix;
    const timings = mysqlTimings(options);
    this.sessions = new MysqlSessions(options, timings, this.deadlines);
    const leaseNote = new IgnoredLeaseNote(
      this.logger,
      'MysqlLockProvider',
      "a named lock lasts as long as its session; the provider's own leaseMs sets how often held sessions are checked",
    );
    const log = { warn: (message: string) => this.logger.warn(redactUrls(message)) };
    this.backend = new MysqlBackend(this.sessions, this.deadlines, this.keyPrefix, timings.pingEveryMs, () => this.lines, leaseNote, log);
    this.lines = new LockLines<MysqlLock>(this.backend, {
      name: 'MysqlLockProvider',
      waitTimeoutMs: options.waitTimeoutMs,
      maxPending: options.maxPending,
      maxPendingTotal: options.maxPendingTotal,
      shutdownGraceMs: options.shutdownGraceMs,
      deadlines: this.deadlines,
      trackHeld: true,
    });
    this.inspector = new MysqlLockInspector(this.sessions, this.keyPrefix, () => this.lines);
  }

  /** Builds the provider `SerializedModule` registers for `driver: 'mysql'`. */
  static fromModuleOptions(options: ResolvedSerializedOptions): MysqlLockProvider {
    return new MysqlLockProvider(mysqlProviderOptions(options));
  }

  /** Diagnostics: the named lock's name for `key` (look it up with `IS_USED_LOCK(name)`). */
  lockNameOf(key: string): string {
    return mysqlLockName(this.keyPrefix, key);
  }

  /** Diagnostics (for tests and health checks): keys held or waited for in this process (0 when idle). */
  get activeKeys(): number {
    return this.lines.activeKeys;
  }

  /** Lock sessions open or opening. */
  get connections(): number {
    return this.sessions.pool.total;
  }

  /** Diagnostics: whether a timer is armed (none when nothing is held or waited for). */
  get timerArmed(): boolean {
    return this.deadlines.armed || this.backend.armed || this.sessions.armed;
  }

  /** Health: `SELECT CONNECTION_ID()` on a lock session, bounded by `timeoutMs` (see `pingLockPool`). */
  override async ping(timeoutMs: number): Promise<void> {
    if (this.closed) throw LockBackendError.shuttingDown();
    const unreachable = (cause: unknown) => this.sessions.backendError(undefined, cause);
    await pingLockPool({ pool: this.sessions.pool, server: 'MySQL', unreachable }, timeoutMs);
  }

  /** Stops the session checks and closes the lock sessions; a lock held past the grace period keeps its session until release. */
  protected async closeBackend(): Promise<void> {
    await this.backend.close(this.lines.holders());
    this.deadlines.clear();
  }
}
