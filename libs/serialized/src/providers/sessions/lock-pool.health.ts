import { LockBackendError } from '../../errors';
import { withTimeout } from '../../observability/with.timeout';
import type { LockSessionPool } from './lock-session.pool';
import type { PooledSession } from './lock-session.request';

/** Marks "every lock session is busy" apart from "the server did not answer". */
class PoolBusy extends Error {}

/** What the health check needs of a driver: its pool, its server's name, and its error for a server it cannot use. */
export interface PoolHealth<C extends PooledSession & { ping(): Promise<void> }> {
  readonly pool: LockSessionPool<C>;
  /** `PostgreSQL`, `MySQL`: named in a timeout. */
  readonly server: string;
  /** The driver's error for a server that cannot be reached or did not answer the check. */
  readonly unreachable: (cause: unknown) => LockBackendError;
}

/**
 * Health of a SQL driver's lock pool: one statement (the session's `ping`) on a
 * lock session — an idle one, or one opened for it — bounded by `timeoutMs`.
 *
 * It shares a session with held locks like any try does. When no session has room
 * (each waits in the server or carries its most uses), the check reports up: held
 * sessions are already pinged by the liveness monitor, which ends one (and so frees
 * room for the next check) when the server stops answering. A full pool is load,
 * not an outage.
 */
export async function pingLockPool<C extends PooledSession & { ping(): Promise<void> }>(
  { pool, server, unreachable }: PoolHealth<C>,
  timeoutMs: number,
): Promise<void> {
  const taken = pool.take({
    // A non-blocking statement: it may share a session with held locks.
    shared: true,
    timeoutMs,
    timeoutError: () => new PoolBusy(),
    backendError: unreachable,
  });
  let session: C;
  if ('promise' in taken) {
    try {
      session = await withTimeout(taken.promise, timeoutMs, server);
    } catch (error) {
      taken.cancel(error);
      if (error instanceof PoolBusy) return;
      throw error instanceof LockBackendError ? error : unreachable(error);
    }
  } else {
    session = taken;
  }
  try {
    await withTimeout(session.ping(), timeoutMs, server);
  } catch (error) {
    // A session that did not answer in time must not be handed to a lock attempt.
    pool.discard(session, error as Error);
    throw error instanceof LockBackendError ? error : unreachable(error);
  }
  pool.release(session);
}
