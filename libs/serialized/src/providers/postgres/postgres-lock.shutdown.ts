import { LockBackendError, LockLostError } from '../../errors';
import type { DeadlineQueue } from '../../internal/deadline-queue';
import type { HeldLocks } from '../../internal/held-locks';
import type { KeyedWaitQueue } from '../../internal/keyed-wait-queue';
import type { LockAttempt } from './lock.attempt';
import type { LockConnectionPool } from './lock-connection.pool';
import type { PostgresLock } from './postgres-lock';
import type { SessionLivenessMonitor } from './session-liveness.monitor';

/** The parts of a PostgreSQL provider that shutting down winds down. */
export interface LockProviderParts {
  readonly held: HeldLocks<PostgresLock>;
  readonly queue: KeyedWaitQueue;
  readonly attempts: Map<string, LockAttempt>;
  readonly monitor: SessionLivenessMonitor;
  readonly pool: LockConnectionPool;
  readonly deadlines: DeadlineQueue;
  readonly connectTimeoutMs: number;
  readonly shutdownGraceMs: number;
}

const NO_LONGER_WATCHED =
  'the provider shut down past its grace period and stopped watching its PostgreSQL session (the session keeps the lock until release)';

/** Refuses newcomers, rejects waiters (local and in the server) and waits for holders up to the grace period. */
export async function stopTakingLocks(parts: LockProviderParts): Promise<void> {
  parts.held.close();
  const closing = (key: string) => LockBackendError.shuttingDown(key);
  parts.queue.rejectAll(closing);
  for (const attempt of [...parts.attempts.values()]) attempt.abort(closing(attempt.key));
  await parts.held.drain(parts.shutdownGraceMs);
}

/** Stops the session checks and closes the lock pool; locks still held keep their sessions until release. */
export async function closeLockSessions(parts: LockProviderParts): Promise<void> {
  parts.held.close();
  parts.monitor.stop();
  // Nothing watches the sessions still held past the grace period any more (and
  // they no longer keep the process alive): their holders are told now.
  for (const lock of [...parts.held.values()]) if (!lock.released) lock.markLost(new LockLostError(lock.key, NO_LONGER_WATCHED));
  // Aborted waits end their sessions as soon as the server answers the cancel.
  await Promise.race([
    Promise.all([...parts.attempts.values()].map((attempt) => attempt.done)),
    new Promise((resolve) => setTimeout(resolve, parts.connectTimeoutMs).unref()),
  ]);
  // Sessions still held past the grace period stay until their holders release
  // them, without keeping the process alive.
  for (const lock of parts.held.values()) lock.connection.unref();
  await parts.pool.close();
  parts.deadlines.clear();
}
