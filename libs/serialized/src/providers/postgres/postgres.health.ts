import { LockBackendError } from '../../errors';
import { withTimeout } from '../../observability/with.timeout';
import { LockSession } from './lock.session';
import type { LockSessionPool } from '../sessions/lock-session.pool';

/** Marks "every lock session is busy" apart from "PostgreSQL did not answer". */
class PoolBusy extends Error {}

/**
 * Health of the lock pool's database: `SELECT pg_backend_pid()` on a lock
 * connection (an idle one, or one opened for it), bounded by `timeoutMs`.
 *
 * It shares a session with held locks like any try does. When no session has room
 * (each waits in the server or carries its most uses), the check reports up:
 * held sessions are already pinged by the liveness monitor, which ends one (and
 * so frees room for the next check) when PostgreSQL stops answering. A full pool
 * is load, not an outage.
 */
export async function pingLockPool(pool: LockSessionPool<LockSession>, timeoutMs: number): Promise<void> {
  const taken = pool.take({
    // A non-blocking statement: it may share a session with held locks.
    shared: true,
    timeoutMs,
    timeoutError: () => new PoolBusy(),
    backendError: (cause) => new LockBackendError(`PostgreSQL cannot be reached: ${(cause as Error)?.message ?? cause}`, { cause }),
  });
  let session: LockSession;
  if (taken instanceof LockSession) {
    session = taken;
  } else {
    try {
      session = await withTimeout(taken.promise, timeoutMs, 'PostgreSQL');
    } catch (error) {
      taken.cancel(error);
      if (error instanceof PoolBusy) return;
      throw error;
    }
  }
  try {
    await withTimeout(session.ping(), timeoutMs, 'PostgreSQL');
  } catch (error) {
    // A session that did not answer in time must not be handed to a lock attempt.
    pool.discard(session, error as Error);
    throw error instanceof LockBackendError
      ? error
      : new LockBackendError(`PostgreSQL health check failed: ${(error as Error)?.message ?? error}`, { cause: error });
  }
  pool.release(session);
}
