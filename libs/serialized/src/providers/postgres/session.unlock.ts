import { LockLostError } from '../../errors';
import type { LockSessionPool } from '../sessions/lock-session.pool';
import type { LockSession } from './lock.session';
import type { PostgresLock } from './postgres.lock';
import type { LockStatements } from './postgres-lock.statements';

/** `unlockSession` kept the lock: no other session waits for it. */
export const KEPT = Symbol('kept');

/**
 * Unlocks `lock` on its session and gives the session back to the pool. The
 * result of the unlock is checked: `false` (the session did not hold the lock:
 * someone called `pg_advisory_unlock_all()` on it, or a pooler swapped sessions)
 * closes the session and comes back as the `LockLostError` to report. A session
 * already gone (its holder was told when it went), or an unlock that fails, ends
 * the session, which frees the lock on the server whatever happened to the
 * unlock; a failed unlock is reported as a `LockLostError` too (the session may
 * have ended while the holder worked).
 */
export async function unlockSession(
  lock: Pick<PostgresLock, 'key' | 'lockKey' | 'session'>,
  pool: LockSessionPool<LockSession>,
  statements: LockStatements,
  /** Only if another session waits for the key in the server; otherwise keep it (`KEPT`). */
  onlyIfWaited = false,
): Promise<LockLostError | undefined | typeof KEPT> {
  const session = lock.session;
  session.letGo(lock as PostgresLock);
  if (session.dead) return undefined; // the session ended, and its locks with it
  let unlocked: unknown;
  try {
    [unlocked] = onlyIfWaited ? await session.unlockIfWaited(statements, lock.lockKey) : await session.unlock(statements, lock.lockKey);
    if (onlyIfWaited && unlocked === null) return KEPT;
  } catch (error) {
    pool.discard(session, error instanceof Error ? error : new Error(String(error)));
    // The session ended before the unlock was confirmed: the lock went with it, and
    // possibly while the holder still worked (the socket's end had not reached us).
    // The holder is told rather than told nothing.
    return new LockLostError(
      lock.key,
      `its PostgreSQL session ended before the release was confirmed (${(error as Error)?.message ?? error})`,
      error,
    );
  }
  if (unlocked === true) {
    pool.release(session);
    return undefined;
  }
  // Other locks of this session are suspect too: ending it frees them and tells their holders.
  pool.discard(session, new Error('pg_advisory_unlock returned false'));
  return new LockLostError(
    lock.key,
    'PostgreSQL reported at release that its session did not hold the advisory lock (pg_advisory_unlock returned false); its session was closed',
  );
}

/** Checks `lock`'s session now (`lock.extend()`); a session that fails the check is ended. */
export async function checkSession(lock: PostgresLock): Promise<void> {
  try {
    await lock.session.ping();
  } catch (error) {
    lock.session.kill(error instanceof Error ? error : new Error(String(error)));
    throw lock.lost ?? new LockLostError(lock.key, 'its PostgreSQL session could not be checked', error);
  }
}

/**
 * Gives back a lock held beside others (a reader's key shared; a group's slot and
 * key shared, telling the group's gate holder on its channel) and the session to the
 * pool, with every result checked as {@link unlockSession} does.
 */
export async function unlockBesideSession(
  lock: Pick<PostgresLock, 'key' | 'lockKey' | 'session' | 'beside'>,
  pool: LockSessionPool<LockSession>,
  statements: LockStatements,
): Promise<LockLostError | undefined> {
  const session = lock.session;
  session.letGo(lock as PostgresLock);
  if (session.dead) return undefined;
  const { slotKey, shape } = lock.beside!;
  let row: unknown[];
  try {
    row = await session.giveBackShaped(statements, lock.lockKey, shape, slotKey);
  } catch (error) {
    pool.discard(session, error instanceof Error ? error : new Error(String(error)));
    return new LockLostError(
      lock.key,
      `its PostgreSQL session ended before the release was confirmed (${(error as Error)?.message ?? error})`,
      error,
    );
  }
  // Each lock given back answers true: the key, the marks, and a group's slot.
  if (row.slice(0, 1 + shape.marks.length + (slotKey === undefined ? 0 : 1)).every((held) => held === true)) {
    pool.release(session);
    return undefined;
  }
  pool.discard(session, new Error('pg_advisory_unlock_shared returned false'));
  return new LockLostError(
    lock.key,
    'PostgreSQL reported at release that its session did not hold the advisory lock (pg_advisory_unlock returned false); its session was closed',
  );
}
