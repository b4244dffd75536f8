import { PostgresLockProvider, type PostgresLockProviderOptions } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../../support/services';
import { uniquePrefix, type PgInspector } from './pg-inspect';

/**
 * Provider instances a test makes, each with its own lock pool (so its own
 * sessions, as another app instance would have), closed together after the test.
 */
export class ProviderSet {
  private readonly open: PostgresLockProvider[] = [];

  make(options: PostgresLockProviderOptions = {}): PostgresLockProvider {
    const provider = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, lockPoolSize: 5, ...options });
    this.open.push(provider);
    return provider;
  }

  /** Two instances sharing a namespace, told apart by application_name. */
  pair(options: PostgresLockProviderOptions = {}): { a: PostgresLockProvider; b: PostgresLockProvider } {
    const keyPrefix = options.keyPrefix ?? uniquePrefix('pair');
    return {
      a: this.make({ keyPrefix, applicationName: `${keyPrefix}:a`, ...options }),
      b: this.make({ keyPrefix, applicationName: `${keyPrefix}:b`, ...options }),
    };
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.open.splice(0).map((p) => p.close()));
  }
}

/** Backend pids of the sessions named `applicationName` that hold a granted advisory lock. */
export async function advisoryHolders(pg: PgInspector, applicationName: string): Promise<number[]> {
  const rows = await pg.query<{ pid: number }>(
    `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1 ORDER BY l.pid`,
    [applicationName],
  );
  return rows.map((r) => r.pid);
}

/** Where the test's PostgreSQL listens (the TCP proxy's upstream). */
export function databaseTarget(url = TEST_DATABASE_URL): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port) || 5432 };
}
