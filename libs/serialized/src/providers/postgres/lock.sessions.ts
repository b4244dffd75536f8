import { LockBackendError } from '../../errors';
import type { DeadlineQueue } from '../../internal/deadline.queue';
import { redactUrls } from '../../internal/secrets.redact';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { lockClientConfig } from './lock-client.config';
import { LockSessionPool } from '../sessions/lock-session.pool';
import type { LockSession } from './lock.session';
import { openLockSession, type LockSessionSettings } from './lock-session.opener';
import { loadPgDriver } from './pg-driver.loader';
import { lockStatements, type LockStatements } from './postgres-lock.statements';
import {
  lockApplicationName,
  lockPoolSizeOf,
  type PostgresLockProviderOptions,
  type SessionTimings,
} from './postgres-lock-provider.options';
import { QueryWatchdog } from '../sessions/query.watchdog';
import type { SessionChangedError } from './session-changed.error';

/**
 * The database side of one provider: how its lock sessions are opened, the pool
 * they live in, the SQL they run, the watchdog that bounds every statement, and
 * whether the server turned out not to pin sessions (a transaction pooler) — after
 * which every acquisition is refused. Knows nothing of keys, waiters or holders.
 */
export class LockSessions {
  readonly pool: LockSessionPool<LockSession>;
  readonly statements: LockStatements;
  /** The lock sessions' `application_name`. */
  readonly applicationName: string;
  /** Bound on opening a lock session (and on cancelling a server wait). */
  readonly connectTimeoutMs: number;
  /** How sessions are opened; the idempotency store opens its own pool with them. */
  readonly settings: LockSessionSettings;
  private readonly watchdog = new QueryWatchdog(250);
  // Set once, by the first session found not pinned (written only by `refuse`).
  private refusal: SessionChangedError | undefined;

  /** @throws Error when `pg` is not installed, or an option is invalid */
  constructor(
    options: PostgresLockProviderOptions,
    keyPrefix: string,
    timings: SessionTimings,
    deadlines: DeadlineQueue,
    private readonly logError: (message: string) => void,
  ) {
    const pg = loadPgDriver();
    this.connectTimeoutMs = options.connectTimeoutMs ?? SERIALIZED_DEFAULTS.connectTimeoutMs;
    this.applicationName = lockApplicationName(options, keyPrefix);
    this.statements = lockStatements(options.fencingSequence ?? SERIALIZED_DEFAULTS.pgFencingSequence);
    this.settings = {
      pg,
      config: lockClientConfig(options),
      applicationName: this.applicationName,
      connectTimeoutMs: this.connectTimeoutMs,
      sessionTimeoutMs: timings.sessionTimeoutMs,
      keepaliveSeconds: timings.keepaliveSeconds,
      sequence: this.statements.sequence,
      createSchema: options.createSchema ?? true,
    };
    this.pool = new LockSessionPool<LockSession>(
      {
        size: lockPoolSizeOf(options),
        open: () => openLockSession(this.settings, this.watchdog, (error) => this.refuse(error)),
        idleTimeoutMs: options.idleTimeoutMs ?? SERIALIZED_DEFAULTS.pgIdleTimeoutMs,
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

  /** Sessions are not pinned (a transaction pooler): every acquisition is refused from now on. */
  refuse(error: SessionChangedError): void {
    if (!this.refusal) this.logError(redactUrls(error.message));
    this.refusal ??= error;
  }

  /** Throws the backend error once sessions were found not pinned. */
  assertUsable(key: string): void {
    if (this.refusal) throw this.backendError(key, this.refusal);
  }

  /** The transport-neutral error for a database that cannot be used (credentials in URLs redacted). */
  backendError(key: string, cause: unknown): LockBackendError {
    const reason = redactUrls(cause instanceof Error ? cause.message : String(cause));
    return new LockBackendError(`PostgreSQL cannot be used for locks: ${reason}`, { key, cause });
  }
}
