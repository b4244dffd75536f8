import type { MysqlSessionSettings } from './mysql-session.opener';
import { KILL_QUERY } from './mysql-lock.sql';

/**
 * Ends the statement a lock session runs (its blocking `GET_LOCK`) from a
 * connection of its own, opened for that and closed after: the lock pool may be
 * full of waiting sessions, and a shared session must not queue the kill behind
 * them. MySQL's own cancel, as the PostgreSQL driver's CancelRequest is
 * PostgreSQL's. Best effort within `timeoutMs`: the waiting session is ended by
 * its caller whatever happens here, and the server's own timeout bounds the wait.
 */
export function killQuery(settings: MysqlSessionSettings, sessionId: number, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const connection = settings.mysql.createConnection({ ...settings.config, connectTimeout: timeoutMs });
    const timer = setTimeout(() => done(), timeoutMs);
    timer.unref();
    let finished = false;
    const done = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      connection.destroy();
      resolve();
    };
    connection.on('error', done);
    connection.query({ sql: KILL_QUERY }, [sessionId], () => done());
  });
}
