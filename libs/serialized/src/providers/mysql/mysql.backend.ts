import { LockLostError, LockTimeoutError } from '../../errors';
import type { DeadlineQueue } from '../../internal/deadline.queue';
import type { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import type { LineCaller } from '../../local/line.caller';
import type { LockBackend } from '../../local/lock-backend.interface';
import type { LockLines } from '../../local/lock.lines';
import { SessionLivenessMonitor } from '../sessions/session-liveness.monitor';
import { SessionAttempts } from '../sessions/session-attempts.registry';
import { closeSessionBackend } from '../sessions/session-backend.shutdown';
import { MysqlLockAttempt } from './mysql-lock.attempt';
import { mysqlLockName } from './mysql-lock.name';
import { MysqlLock } from './mysql.lock';
import type { MysqlSession } from './mysql.session';
import type { MysqlSessions } from './mysql.sessions';

/** What the backend tells the provider's lines (the layer) of its own events. */
type MysqlLines = Pick<LockLines<MysqlLock>, 'waitsBehind' | 'heldCount' | 'released'>;

const KEY_HELD_HERE = 'key held (or asked for by an earlier caller of this process)';
/**
 * The MySQL / MariaDB backend: named locks (`GET_LOCK` / `RELEASE_LOCK`) on the
 * sessions of the library's own pool. What is MySQL's lives here and in the
 * attempt: the lock name, the try-then-wait with its kill, the checked release,
 * the fencing counter. The layer does the rest (line, admission, timeouts, aborts,
 * shutdown). Every release goes to the server (no local hand-off: MySQL cannot say
 * whether another session waits, so arrival order is the server's).
 */
export class MysqlBackend implements LockBackend<MysqlLock> {
  private readonly attempts = new SessionAttempts<MysqlSession, MysqlLockAttempt>();
  private readonly monitor: SessionLivenessMonitor<MysqlSession>;
  private readonly owner = {
    releaseLock: (lock: MysqlLock) => this.lines().released(lock),
    checkLock: (lock: MysqlLock) => this.check(lock),
  };

  constructor(
    private readonly sessions: MysqlSessions,
    private readonly deadlines: DeadlineQueue,
    private readonly keyPrefix: string,
    pingEveryMs: number,
    /** The provider's lines (made after the backend). */
    private readonly lines: () => MysqlLines,
    private readonly leaseNote: IgnoredLeaseNote,
    private readonly log: { warn(message: string): void },
  ) {
    this.monitor = new SessionLivenessMonitor<MysqlSession>(
      () => sessions.pool.shareable(),
      () => lines().heldCount > 0,
      // A session that does not answer in time is ended by its watchdog (and so tells its holders).
      (session) => (session.busy ? Promise.resolve() : session.ping()),
      pingEveryMs,
    );
  }

  /** Whether the liveness checks' timer runs. */
  get armed(): boolean {
    return this.monitor.armed;
  }

  take(caller: LineCaller<MysqlLock>): Promise<MysqlLock | null> {
    this.leaseNote.check(caller.leaseMs, caller.key);
    const attempt = new MysqlLockAttempt(this.sessions, this.deadlines, caller.key, mysqlLockName(this.keyPrefix, caller.key), caller);
    return this.attempts.run(attempt, caller, this.lines()).then((grant) => {
      if (grant === null) return null;
      const lock = new MysqlLock(caller.key, grant.fencingToken, attempt.name, grant.session, this.owner);
      // A session that ended on the way tells the lock at once.
      grant.session.hold(lock);
      this.monitor.arm();
      return lock;
    });
  }

  windingDown(key: string): Promise<void> | undefined {
    return this.attempts.windingDown(key);
  }

  /** `RELEASE_LOCK`, its answer checked: anything but 1 means the lock was not ours any more, and the holder is told. */
  async release(lock: MysqlLock): Promise<undefined> {
    const { session } = lock;
    session.letGo(lock);
    // The session ended, and its locks with it (the holder was told when it went).
    if (session.dead) return undefined;
    let lost: LockLostError | undefined;
    try {
      const answer = await session.releaseLock(lock.name);
      if (answer === 1) {
        this.sessions.pool.release(session);
        return undefined;
      }
      // Other locks of this session are suspect too: ending it frees them and tells their holders.
      const said = answer === 0 ? '0: another session holds it' : 'NULL: no such lock';
      this.sessions.pool.discard(session, new Error(`RELEASE_LOCK returned ${said}`));
      lost = new LockLostError(
        lock.key,
        `MySQL reported at release that its session did not hold the named lock (RELEASE_LOCK returned ${said}); its session was closed`,
      );
    } catch (error) {
      this.sessions.pool.discard(session, error instanceof Error ? error : new Error(String(error)));
      // The session ended before the release was confirmed: the lock went with it, perhaps while the holder worked.
      lost = new LockLostError(
        lock.key,
        `its MySQL session ended before the release was confirmed (${(error as Error)?.message ?? error})`,
        error,
      );
    }
    // A loss found at release is told (signal, `lost`) and logged once; letting go itself succeeded.
    if (!lock.lost) {
      lock.markLost(lost);
      this.log.warn(lost.message);
    }
    return undefined;
  }

  timeoutError(key: string, waitTimeoutMs: number): LockTimeoutError {
    return new LockTimeoutError(key, waitTimeoutMs, undefined, { reason: 'key-held', message: KEY_HELD_HERE });
  }

  stopAsking(error: (key: string) => Error): void {
    this.attempts.abortAll(error);
  }

  /** After shutdown: stops the session checks, tells holders past the grace period, closes the lock pool. */
  close(holders: Iterable<MysqlLock>): Promise<void> {
    const { monitor, attempts } = this;
    const { pool, connectTimeoutMs } = this.sessions;
    return closeSessionBackend({ monitor, attempts, pool, connectTimeoutMs, server: 'MySQL' }, holders);
  }

  /** `lock.extend()`: the session answers now, or it is ended (which tells the holder). */
  private async check(lock: MysqlLock): Promise<void> {
    try {
      await lock.session.ping();
    } catch (error) {
      lock.session.kill(error instanceof Error ? error : new Error(String(error)));
      throw lock.lost ?? new LockLostError(lock.key, 'its MySQL session could not be checked', error);
    }
  }
}
