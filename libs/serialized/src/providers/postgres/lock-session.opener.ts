import { LockConnection, type LockSessionSettings } from './lock-connection';
import { SEQUENCE_INCREMENT } from './lock-session.sql';
import { TOKEN_BLOCK } from './postgres-lock.statements';
import type { QueryWatchdog } from './query.watchdog';
import { SessionChangedError } from './session-changed.error';

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
): Promise<LockConnection> {
  let opened;
  try {
    opened = await LockConnection.open(settings, watchdog);
  } catch (error) {
    if (error instanceof SessionChangedError) refuse(error);
    throw error;
  }
  const { connection, sequenceIncrement } = opened;
  const sequencePresent = sequenceIncrement !== 0;
  connection.tokens.block = Math.max(1, sequenceIncrement);
  if (!sequencePresent) {
    try {
      if (!settings.createSchema) {
        throw new Error(
          `the fencing-token sequence ${settings.sequence} is missing and createSchema is off; ` +
            `create it once with "CREATE SEQUENCE IF NOT EXISTS ${settings.sequence} INCREMENT BY ${TOKEN_BLOCK}" and grant USAGE on it to this role`,
        );
      }
      await createSequence(connection, settings.sequence);
      const [increment] = await connection.query({ text: SEQUENCE_INCREMENT, values: [settings.sequence], rowMode: 'array' });
      connection.tokens.block = Math.max(1, Number(increment ?? 1));
    } catch (error) {
      connection.kill(error as Error);
      throw error;
    }
  }
  return connection;
}

async function createSequence(connection: LockConnection, sequence: string): Promise<void> {
  try {
    await connection.query({ text: `CREATE SEQUENCE IF NOT EXISTS ${sequence} INCREMENT BY ${TOKEN_BLOCK}`, rowMode: 'array' });
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
