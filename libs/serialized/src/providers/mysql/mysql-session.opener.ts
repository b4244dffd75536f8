import { ConnectDeadline } from '../sessions/connect.deadline';
import type { QueryWatchdog } from '../sessions/query.watchdog';
import type { SessionTokens } from '../sessions/session.tokens';
import type { MysqlConnectionLike, MysqlError, MysqlModule } from './mysql-driver.loader';
import { SESSION_ID, SESSION_SETUP, type CounterStatements } from './mysql-lock.sql';
import { MysqlSession } from './mysql.session';

/** Tokens one draw of the fencing counter reserves for the grants of a provider's sessions. */
export const MYSQL_TOKEN_BLOCK = 1024;

/** How the lock sessions of one provider are opened. */
export interface MysqlSessionSettings {
  readonly mysql: MysqlModule;
  /** mysql2 connection settings (from the URL or the app pool's). */
  readonly config: Record<string, unknown>;
  /** Bound on connect + session set-up. */
  readonly connectTimeoutMs: number;
  readonly sessionTimeoutMs: number;
  /** The sessions' `wait_timeout` (seconds). */
  readonly serverIdleSeconds: number;
  /** The fencing counter's table (quoted) and statements. */
  readonly table: string;
  readonly counter: CounterStatements;
  /** Create the fencing table when it is missing. */
  readonly createSchema: boolean;
}

/**
 * Opens one session of the lock pool: connects, applies the session settings and
 * reads the session's id, within `connectTimeoutMs` counted in watchdog time (a
 * process that did not run has not waited for the server). `prepare` runs once
 * per provider on the first session (the fencing table). `tokens`: the provider's
 * block of fencing tokens, which every session's grants share.
 */
export async function openMysqlSession(
  settings: MysqlSessionSettings,
  watchdog: QueryWatchdog,
  tokens: SessionTokens,
  prepare: (session: MysqlSession) => Promise<void>,
): Promise<MysqlSession> {
  // mysql2's own connect timeout is a far backstop; the bound that counts is the guard below.
  const connection = settings.mysql.createConnection({ ...settings.config, connectTimeout: settings.connectTimeoutMs * 10 });
  // A connection without an error listener crashes the process on a dropped socket.
  let failed: MysqlError | undefined;
  connection.on('error', (error) => (failed ??= error));
  const bound = new ConnectDeadline(watchdog, settings.connectTimeoutMs, () => connection.destroy());
  try {
    await statement(connection, SESSION_SETUP, [settings.serverIdleSeconds, settings.serverIdleSeconds]);
    const [[id]] = (await statement(connection, SESSION_ID, [])) as unknown[][];
    if (failed) throw failed;
    const session = new MysqlSession(connection, Number(id), watchdog, settings.sessionTimeoutMs, settings.counter, tokens);
    bound.settle();
    try {
      await prepare(session);
    } catch (error) {
      session.kill(error as Error);
      throw error;
    }
    return session;
  } catch (error) {
    connection.destroy();
    if (bound.timedOut) throw new Error(`could not connect to MySQL within ${settings.connectTimeoutMs} ms`, { cause: error });
    throw error;
  } finally {
    bound.end();
  }
}

/** Creates the fencing table and its row when missing (concurrent creators are harmless). */
export async function createFencingTable(session: MysqlSession, settings: MysqlSessionSettings): Promise<void> {
  const [present] = await session.query('SELECT COUNT(*) FROM ' + settings.table + ' WHERE id = 1', []).then(
    (row) => [Number(row[0]) === 1],
    (error: MysqlError) => {
      // ER_NO_SUCH_TABLE: created below; anything else is a real failure.
      if (error.errno === 1146) return [false];
      throw error;
    },
  );
  if (present) return;
  if (!settings.createSchema) {
    throw new Error(
      `the fencing table ${settings.table} is missing and createSchema is off; create it once with "${settings.counter.create.join('; ')}"`,
    );
  }
  for (const sql of settings.counter.create) await session.query(sql, []);
}

function statement(connection: MysqlConnectionLike, sql: string, values: unknown[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    connection.query({ sql, rowsAsArray: true }, values, (error, rows) => (error ? reject(error) : resolve(rows)));
  });
}
