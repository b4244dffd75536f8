import type { ClientConfig } from 'pg';
import { LockSession } from './lock.session';
import { SEQUENCE_INCREMENT, SESSION_CHECK, SESSION_SETUP } from './lock-session.sql';
import { destroySocket } from './pg-client.internals';
import type { PgModule } from './pg-driver.loader';
import { TOKEN_BLOCK } from './postgres-lock.statements';
import { ConnectDeadline } from '../sessions/connect.deadline';
import type { QueryWatchdog } from '../sessions/query.watchdog';
import { SessionChangedError } from './session-changed.error';

/** How the lock sessions of one provider are opened. */
export interface LockSessionSettings {
  readonly pg: PgModule;
  /** Connection settings (URL or the app pool's options), without pool-only fields. */
  readonly config: ClientConfig;
  /** Shown in `pg_stat_activity`, so operators and tests can count lock sessions. */
  readonly applicationName: string;
  /** Bound on connect + session set-up. */
  readonly connectTimeoutMs: number;
  /**
   * How long an open session may leave a statement unanswered (beyond the time the
   * server may take by design, such as a lock wait) before it counts as lost.
   */
  readonly sessionTimeoutMs: number;
  /**
   * Server-side TCP keepalive (seconds) for idle, interval and 3 probes: the server
   * ends the session of a vanished client, and so frees its locks, within about a lease.
   */
  readonly keepaliveSeconds: number;
  /** The fencing sequence (quoted), checked for presence during set-up. */
  readonly sequence: string;
  /** Create the sequence when it is missing (off for roles that may not run DDL). */
  readonly createSchema: boolean;
}

/**
 * Opens one session of the lock pool and makes sure the fencing-token sequence
 * exists (created on the first connection that finds it missing). A session
 * that turns out not to be pinned (a transaction pooler) is reported to
 * `refuse`, so the provider refuses from then on.
 */
export async function openLockSession(
  settings: LockSessionSettings,
  watchdog: QueryWatchdog,
  refuse: (error: SessionChangedError) => void,
): Promise<LockSession> {
  let opened;
  try {
    opened = await connectLockSession(settings, watchdog);
  } catch (error) {
    if (error instanceof SessionChangedError) refuse(error);
    throw error;
  }
  const { session, sequenceIncrement } = opened;
  const sequencePresent = sequenceIncrement !== 0;
  session.tokens.sized(sequenceIncrement);
  if (!sequencePresent) {
    try {
      if (!settings.createSchema) {
        throw new Error(
          `the fencing-token sequence ${settings.sequence} is missing and createSchema is off; ` +
            `create it once with "CREATE SEQUENCE IF NOT EXISTS ${settings.sequence} INCREMENT BY ${TOKEN_BLOCK}" and grant USAGE on it to this role`,
        );
      }
      await createSequence(session, settings.sequence);
      const [increment] = await session.query({ text: SEQUENCE_INCREMENT, values: [settings.sequence], rowMode: 'array' });
      session.tokens.sized(Number(increment ?? 1));
    } catch (error) {
      session.kill(error as Error);
      throw error;
    }
  }
  return session;
}

async function createSequence(session: LockSession, sequence: string): Promise<void> {
  try {
    await session.query({ text: `CREATE SEQUENCE IF NOT EXISTS ${sequence} INCREMENT BY ${TOKEN_BLOCK}`, rowMode: 'array' });
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Another process created it at the same moment.
    if (code === '42P07' || code === '23505') return;
    throw new Error(
      `cannot create the fencing-token sequence ${sequence} (${(error as Error).message}); ` +
        `create it once with "CREATE SEQUENCE ${sequence} INCREMENT BY ${TOKEN_BLOCK}" and grant USAGE on it to this role`,
      { cause: error },
    );
  }
}

/** The outcome of opening a session. */
export interface OpenedSession {
  readonly session: LockSession;
  /** The fencing sequence's increment (0: the sequence is missing). */
  readonly sequenceIncrement: number;
}

/**
 * Connects, applies the session settings and checks that two statements run on
 * one server session. Rejects within `connectTimeoutMs`; the client is destroyed
 * on any failure.
 */
export async function connectLockSession(settings: LockSessionSettings, watchdog: QueryWatchdog): Promise<OpenedSession> {
  const client = new settings.pg.Client({
    ...settings.config,
    application_name: settings.applicationName,
    // A far backstop only: the bound that counts is the watchdog-time guard below.
    connectionTimeoutMillis: settings.connectTimeoutMs * 10,
    keepAlive: true,
  });
  let session: LockSession | undefined;
  // A client without an error listener crashes the process on a dropped socket.
  client.on('error', (error: Error) => session?.kill(error));
  client.on('end', () => session?.kill(new Error('the connection to PostgreSQL ended')));

  const bound = new ConnectDeadline(watchdog, settings.connectTimeoutMs, () => destroySocket(client));
  try {
    await client.connect();
    const setup = await client.query({
      text: SESSION_SETUP,
      values: [settings.applicationName, String(settings.keepaliveSeconds)],
      rowMode: 'array',
    });
    const check = await client.query({ text: SESSION_CHECK, values: [settings.sequence], rowMode: 'array' });
    const firstPid = Number(setup.rows[0][0]);
    const laterPid = Number(check.rows[0][0]);
    if (firstPid !== laterPid) throw new SessionChangedError(firstPid, laterPid);
    session = new LockSession(client, firstPid, watchdog, settings.sessionTimeoutMs);
    return { session, sequenceIncrement: check.rows[0][1] === true ? Number(check.rows[0][2] ?? 1) : 0 };
  } catch (error) {
    destroySocket(client);
    if (bound.timedOut && !(error instanceof SessionChangedError)) {
      throw new Error(`could not connect to PostgreSQL within ${settings.connectTimeoutMs} ms`, { cause: error });
    }
    throw error;
  } finally {
    bound.end();
  }
}
