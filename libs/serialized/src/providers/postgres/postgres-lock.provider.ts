import { validateProviderOptions } from '../../config/provider-options.validator';
import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import { postgresProviderOptions } from '../../config/provider-options.mapper';
import { LockBackendError } from '../../errors';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { PostgresIdempotencyStore } from '../../idempotency/stores/postgres-idempotency.store';
import { DeadlineQueue } from '../../internal/deadline.queue';
import { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import { LayeredLockProvider } from '../../local/layered-lock.provider';
import { LockLines } from '../../local/lock.lines';
import { redactUrls } from '../../internal/secrets.redact';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import type { LockSessionSettings } from './lock-session.opener';
import { LockSessions } from './lock.sessions';
import { pingLockPool } from '../sessions/lock-pool.health';
import { sessionTimings, type PostgresLockProviderOptions } from './postgres-lock-provider.options';
import { PostgresBackend, type HandedLock } from './postgres.backend';
import { PostgresLockInspector } from './postgres-lock.inspector';
import type { KeyInspector } from '../../inspect/key-inspector.interface';
import type { PostgresLock } from './postgres.lock';

export type { PostgresLockProviderOptions } from './postgres-lock-provider.options';

/**
 * Locks shared by every process using one PostgreSQL database: session-level
 * advisory locks on a small pool of connections the library owns.
 *
 * Two levels: callers of one key first queue in this process (strict FIFO), and
 * only the head tries the key in PostgreSQL (`pg_try_advisory_lock`, on a session
 * other keys' locks share). Only when another session holds the key does the head
 * take a session of its own and wait in PostgreSQL's lock queue, bounded there by
 * `lock_timeout`. So a held lock costs no connection of its own, at most one
 * connection per key and process waits, and a full pool makes callers queue, not
 * fail (a wait that runs out there has `LockTimeoutError#reason` `no-connection`).
 *
 * Held sessions are pinged; a session that ends (terminated backend, closed socket,
 * server restart, or a path silent for `sessionTimeoutMs`) aborts the `signal` of
 * every lock it held with `LockLostError`. A slow path is not a lost session.
 *
 * See docs/providers/postgres.md.
 */
export class PostgresLockProvider
  extends LayeredLockProvider
  implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource
{
  /** Diagnostics: the lock sessions' `application_name` (count them in `pg_stat_activity`). */
  readonly applicationName: string;
  readonly keyPrefix: string;
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  // One timer queue for the local waiters and the pool's queue.
  private readonly deadlines = new DeadlineQueue();
  private readonly sessions: LockSessions;
  private readonly backend: PostgresBackend;
  /** @internal */
  readonly lines: LockLines<PostgresLock, HandedLock>;
  /**
   * `LockService.inspect`: the local layer and `pg_locks`. Typed by its interface, so
   * the provider's declarations never reach `pg`'s types (an optional peer). @internal
   */
  readonly inspector: KeyInspector;
  private readonly idempotencyTable: string | undefined;

  /** @throws Error when `pg` is not installed, or an option is invalid */
  constructor(options: PostgresLockProviderOptions = {}) {
    super('PostgresLockProvider');
    validateProviderOptions('PostgresLockProvider', options);
    this.keyPrefix = options.keyPrefix ?? SERIALIZED_DEFAULTS.keyPrefix;
    const timings = sessionTimings(options);
    this.idempotencyTable = options.idempotencyTable;
    const log = {
      warn: (message: string) => this.logger.warn(redactUrls(message)),
      error: (message: string) => this.logger.error(redactUrls(message)),
    };
    this.sessions = new LockSessions(options, this.keyPrefix, timings, this.deadlines, log.error);
    this.applicationName = this.sessions.applicationName;
    const leaseNote = new IgnoredLeaseNote(
      this.logger,
      'PostgresLockProvider',
      "a session lock lasts as long as its session; the provider's own leaseMs sets how often held sessions are checked",
    );
    this.backend = new PostgresBackend(this.sessions, this.keyPrefix, options, timings.pingEveryMs, () => this.lines, leaseNote, log);
    this.lines = new LockLines(this.backend, {
      name: 'PostgresLockProvider',
      waitTimeoutMs: options.waitTimeoutMs,
      maxPending: options.maxPending,
      maxPendingTotal: options.maxPendingTotal,
      shutdownGraceMs: options.shutdownGraceMs,
      maxLocalHandOffs: options.maxLocalHandOffs ?? SERIALIZED_DEFAULTS.pgMaxLocalHandOffs,
      deadlines: this.deadlines,
      trackHeld: true,
    });
    this.inspector = new PostgresLockInspector(this.sessions, this.keyPrefix, () => this.lines);
  }

  /** Builds the provider `SerializedModule` registers for `driver: 'postgres'`. */
  static fromModuleOptions(options: ResolvedSerializedOptions): PostgresLockProvider {
    return new PostgresLockProvider(postgresProviderOptions(options));
  }

  /** `@Idempotent`'s records: a table of this database, reached through a small pool of their own. */
  createIdempotencyStore(): IdempotencyStore {
    return new PostgresIdempotencyStore({ ...this.sessions.settings, keyPrefix: this.keyPrefix, table: this.idempotencyTable });
  }

  /** The lock sessions' connection settings, read by the library's own stores (`@OncePerTick`'s tick table). @internal */
  get sessionSettings(): LockSessionSettings {
    return this.sessions.settings;
  }

  /** Health: one statement on a lock session, bounded by `timeoutMs` (see `pingLockPool`). */
  override ping(timeoutMs: number): Promise<void> {
    if (this.closed) return Promise.reject(LockBackendError.shuttingDown());
    const unreachable = (cause: unknown) =>
      new LockBackendError(`PostgreSQL cannot be reached: ${(cause as Error)?.message ?? cause}`, { cause });
    return pingLockPool({ pool: this.sessions.pool, server: 'PostgreSQL', unreachable }, timeoutMs);
  }

  /** Diagnostics (for tests and health checks): keys held or waited for in this process (0 when idle). */
  get activeKeys(): number {
    return this.lines.activeKeys;
  }

  /**
   * Diagnostics (for tests and operators): checks every lock session against the
   * server now. Each advisory lock PostgreSQL shows for a session of this provider
   * must belong to a holder, a hand-off or an attempt of this provider; one that
   * does not is released at once and logged as an error. Resolves with how many
   * were found (0 is the invariant). The liveness checks run the same audit on
   * every session while locks are held.
   */
  async auditLocks(): Promise<number> {
    return (await this.backend.auditAll()).length;
  }

  /** Lock sessions open or opening. */
  get connections(): number {
    return this.sessions.pool.total;
  }

  /** Diagnostics: whether a timer is armed (none when nothing is held or waited for). */
  get timerArmed(): boolean {
    return this.deadlines.armed || this.backend.armed || this.sessions.armed;
  }

  /** Stops the session checks and closes the lock sessions; a lock held past the grace period keeps its session until release. */
  protected async closeBackend(): Promise<void> {
    await this.backend.close(this.lines.holders());
    this.deadlines.clear();
  }
}
