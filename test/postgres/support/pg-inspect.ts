import { Client } from 'pg';
import { TEST_DATABASE_URL } from '../../support/services';

/**
 * A plain connection for looking at the server from outside the provider:
 * pg_locks, pg_stat_activity, and terminating sessions the test itself
 * identified (by its own application_name or backend pid), never others.
 */
export class PgInspector {
  private constructor(private readonly client: Client) {}

  static async connect(url = TEST_DATABASE_URL): Promise<PgInspector> {
    const client = new Client({ connectionString: url, application_name: 'nestjs-serialized-test-inspector' });
    client.on('error', () => undefined);
    await client.connect();
    return new PgInspector(client);
  }

  query<R extends Record<string, unknown> = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
    return this.client.query(text, values).then((r) => r.rows as R[]);
  }

  /** Sessions whose application_name is `applicationName`. */
  async sessions(applicationName: string): Promise<number> {
    const [row] = await this.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [
      applicationName,
    ]);
    return Number(row.n);
  }

  /** Backend pids of the sessions named `applicationName`. */
  async pids(applicationName: string): Promise<number[]> {
    const rows = await this.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName]);
    return rows.map((r) => r.pid);
  }

  /** Advisory lock rows (held or awaited) of the sessions named `applicationName`. */
  async advisoryLocks(applicationName: string, granted?: boolean): Promise<number> {
    const [row] = await this.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND a.application_name = $1 AND ($2::boolean IS NULL OR l.granted = $2)`,
      [applicationName, granted ?? null],
    );
    return Number(row.n);
  }

  /** Whether backend `pid` still exists. */
  async alive(pid: number): Promise<boolean> {
    const [row] = await this.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1', [pid]);
    return Number(row.n) > 0;
  }

  /** Terminates backend `pid`, after checking it carries `applicationName` (a session this test made). */
  async terminate(pid: number, applicationName: string): Promise<boolean> {
    const [row] = await this.query<{ ok: boolean | null }>(
      'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE pid = $1 AND application_name = $2',
      [pid, applicationName],
    );
    return row?.ok === true;
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

/** A short unique key prefix (it ends up in application_name, 63 bytes at most). */
export const uniquePrefix = (what: string): string => `t-${what}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
