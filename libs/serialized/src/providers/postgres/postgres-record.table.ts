import type { ClientConfig, Pool } from 'pg';
import { LockBackendError } from '../../errors';

/** The SQL that makes sure a record table exists. */
export interface RecordTableSchema {
  /** Quoted, possibly schema-qualified table name (as `exists` takes it). */
  readonly table: string;
  /** The DDL that creates the table (idempotent): run once when allowed, quoted in the error otherwise. */
  readonly schema: string;
  /** `$1` table name → whether the table exists. */
  readonly exists: string;
}

/** One table of records the library keeps beside its locks (idempotency records, tick records). */
export interface PostgresRecordTableOptions {
  /** The `pg` module (loaded by the provider). */
  readonly pg: { Pool: new (config: object) => Pool };
  /** The lock sessions' connection settings (URL, or the app pool's settings). */
  readonly config: ClientConfig;
  /** What the records are, as errors say it: `idempotency` → "the idempotency table …". */
  readonly what: string;
  /** The table's name as the user configured or reads it in the docs. */
  readonly tableName: string;
  readonly statements: RecordTableSchema;
  /** Create the table when it is missing; off for roles that may not run DDL. */
  readonly createSchema: boolean;
  /** The advisory lock two processes creating the table at once take (they would race in the catalog). */
  readonly schemaLock: number;
  /** The pool's `application_name`: not the lock sessions' one, which counts those. */
  readonly applicationName: string;
  /** The pool's size (idle connections close after 10 s). */
  readonly max: number;
  readonly connectTimeoutMs: number;
  readonly queryTimeoutMs: number;
}

/**
 * A record table reached through a small pool of its own: never the lock sessions,
 * which are for locks, and never the app's work pool. Each statement is one short
 * autocommit round trip. The table is checked before the first statement (created
 * when allowed, otherwise an error quoting the SQL to run), and checked again after
 * a failed check, so a table created later is found without a restart.
 */
export class PostgresRecordTable {
  private readonly pool: Pool;
  /** The check of the table: made once, forgotten when it failed. */
  private ready: Promise<void> | undefined;

  constructor(private readonly options: PostgresRecordTableOptions) {
    this.pool = new options.pg.Pool({
      ...options.config,
      application_name: options.applicationName,
      max: options.max,
      idleTimeoutMillis: 10_000,
      connectionTimeoutMillis: options.connectTimeoutMs,
      query_timeout: options.queryTimeoutMs,
      allowExitOnIdle: true,
    });
    // An idle connection that drops must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  /** Runs one statement; any failure is a `LockBackendError` (naming `key` when given). */
  async query(text: string, values: unknown[], key?: string): Promise<unknown[][]> {
    try {
      await (this.ready ??= this.prepare().catch((error) => {
        this.ready = undefined;
        throw error;
      }));
      return (await this.pool.query({ text, values, rowMode: 'array' })).rows;
    } catch (error) {
      throw new LockBackendError(`PostgreSQL cannot be used for ${this.options.what} records: ${(error as Error).message}`, {
        key,
        cause: error,
      });
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** Makes sure the table exists: created once if allowed, otherwise a message with the SQL to run. */
  private async prepare(): Promise<void> {
    const { statements, what, tableName } = this.options;
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query({ text: statements.exists, values: [statements.table], rowMode: 'array' });
      if (rows[0][0] === true) return;
      if (!this.options.createSchema) {
        throw new Error(`the ${what} table ${tableName} is missing and createSchema is off; create it once with:\n${statements.schema}`);
      }
      try {
        await client.query('BEGIN');
        await client.query(`SELECT pg_advisory_xact_lock(${this.options.schemaLock})`);
        await client.query(statements.schema);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(
          `cannot create the ${what} table ${tableName} (${(error as Error).message}); create it once with:\n${statements.schema}`,
          {
            cause: error,
          },
        );
      }
    } finally {
      client.release();
    }
  }
}
