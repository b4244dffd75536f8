import { LockLostError } from '../../errors';

/** What a session backend's shutdown needs of each lock still held past the grace period. */
interface StillHeld {
  readonly key: string;
  readonly released: boolean;
  readonly session: { unref(): void };
  markLost(error: LockLostError): void;
}

/**
 * The parts of a session backend (PostgreSQL, MySQL) that its shutdown ends, in order:
 * its `SessionLivenessMonitor`, its `SessionAttempts` and its `LockSessionPool`.
 */
export interface SessionBackendParts {
  readonly monitor: { stop(): void };
  readonly attempts: { settled(timeoutMs: number): Promise<void> };
  readonly pool: { close(): Promise<void> };
  readonly connectTimeoutMs: number;
  /** The server's name, as the lost locks' message says it. */
  readonly server: 'PostgreSQL' | 'MySQL';
}

/**
 * A session backend's `close`, after the layer's shutdown drain: stops the session
 * checks, tells holders past the grace period, lets aborted waits end their
 * sessions, and closes the lock pool.
 */
export async function closeSessionBackend(parts: SessionBackendParts, holders: Iterable<StillHeld>): Promise<void> {
  parts.monitor.stop();
  const still = [...holders];
  // Nothing watches the sessions still held past the grace period any more (and
  // they no longer keep the process alive): their holders are told now.
  const message = `the provider shut down past its grace period and stopped watching its ${parts.server} session (the session keeps the lock until release)`;
  for (const lock of still) if (!lock.released) lock.markLost(new LockLostError(lock.key, message));
  // Aborted (PostgreSQL: cancelled; MySQL: killed) waits end their sessions as soon as the server answers.
  await parts.attempts.settled(parts.connectTimeoutMs);
  // Sessions still held past the grace period stay until their holders release them, without keeping the process alive.
  for (const lock of still) lock.session.unref();
  await parts.pool.close();
}
