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
  return givenBack(lock, pool, 'pg_advisory_unlock', async () => {
    const [unlocked] = onlyIfWaited
      ? await session.unlockIfWaited(statements, lock.lockKey)
      : await session.unlock(statements, lock.lockKey);
    return onlyIfWaited && unlocked === null ? KEPT : unlocked === true;
  });
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
  return givenBack(lock, pool, 'pg_advisory_unlock_shared', async () => {
    const row = await session.giveBackShaped(statements, lock.lockKey, shape, slotKey);
    // Each lock given back answers true: the key, the marks, and a group's slot.
    return row.slice(0, 1 + shape.marks.length + (slotKey === undefined ? 0 : 1)).every((held) => held === true);
  });
}

/**
 * Runs the statements that give `lock` back on its session (`send`: whether the
 * session held all it gave back) and settles the session: back to the pool when it
 * did, ended otherwise. A session that ended before the answer took the lock with
 * it, possibly while the holder still worked (the socket's end had not reached us),
 * and one that did not hold the lock has other suspect locks (ending it frees them
 * and tells their holders): either way the holder is told, rather than told nothing.
 */
async function givenBack<T extends boolean | typeof KEPT>(
  lock: Pick<PostgresLock, 'key' | 'session'>,
  pool: LockSessionPool<LockSession>,
  unlockCall: string,
  send: () => Promise<T>,
): Promise<LockLostError | undefined | Exclude<T, boolean>> {
  const session = lock.session;
  let held: T;
  try {
    held = await send();
  } catch (error) {
    pool.discard(session, error instanceof Error ? error : new Error(String(error)));
    return new LockLostError(
      lock.key,
      `its PostgreSQL session ended before the release was confirmed (${(error as Error)?.message ?? error})`,
      error,
    );
  }
  if (held === KEPT) return KEPT as Exclude<T, boolean>;
  if (held === true) {
    pool.release(session);
    return undefined;
  }
  pool.discard(session, new Error(`${unlockCall} returned false`));
  return new LockLostError(
    lock.key,
    `PostgreSQL reported at release that its session did not hold the advisory lock (${unlockCall} returned false); its session was closed`,
  );
}
