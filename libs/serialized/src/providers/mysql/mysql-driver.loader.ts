import { isMissingPackage, missingPeerError } from '../../config/optional.peer';

/** The callback API of a mysql2 connection the driver uses (no mysql2 typings needed to compile the library). */
export interface MysqlConnectionLike {
  readonly threadId: number | null;
  query(
    options: { sql: string; rowsAsArray?: boolean },
    values: unknown[],
    callback: (error: MysqlError | null, rows: unknown) => void,
  ): void;
  on(event: 'error', listener: (error: MysqlError) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  once(event: 'connect', listener: () => void): unknown;
  end(callback?: (error?: unknown) => void): void;
  destroy(): void;
  readonly stream?: { ref?(): void; unref?(): void; setKeepAlive?(enable: boolean, delayMs?: number): void };
}

/** A mysql2 error: the server's `errno` and `code`, and `fatal` when the connection is gone. */
export interface MysqlError extends Error {
  readonly errno?: number;
  readonly code?: string;
  readonly fatal?: boolean;
}

/** The part of the `mysql2` module the driver uses. */
export interface MysqlModule {
  createConnection(config: object): MysqlConnectionLike;
}

/**
 * Loads `mysql2` on first use. The library's entry point re-exports the MySQL
 * provider, so importing `mysql2` at module load would break every app on another
 * driver that does not install it.
 *
 * @param load how to load a module (a test passes one that fails)
 */
export function loadMysqlDriver(load: (id: string) => unknown = require): MysqlModule {
  try {
    return load('mysql2') as MysqlModule;
  } catch (error) {
    // Only mysql2 itself missing, not a module mysql2 failed to load.
    if (isMissingPackage(error, 'mysql2')) throw missingPeerError("driver 'mysql'", 'mysql2');
    throw error;
  }
}
