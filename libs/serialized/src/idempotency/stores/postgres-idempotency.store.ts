import type { ClientConfig, Pool } from 'pg';
import { LockBackendError } from '../../errors';
import { lockApplicationName } from '../../providers/postgres/postgres-lock-provider.options';
import { IDEMPOTENCY_DEFAULTS } from '../idempotency.defaults';
import type { IdempotencyStore } from '../idempotency.store';
import { decodeStoredResponse, encodeStoredResponse, type StoredResponse } from '../stored-response.codec';
import { idempotencyStatements, type IdempotencyStatements } from './postgres-idempotency.statements';

/** What the PostgreSQL provider hands its store. */
export interface PostgresIdempotencyStoreOptions {
  /** The `pg` module (loaded by the provider). */
  readonly pg: { Pool: new (config: object) => Pool };
  /** The lock sessions' connection settings (URL, or the app pool's settings). */
  readonly config: ClientConfig;
  readonly keyPrefix: string;
  /** `name` or `schema.name` (default `nestjs_serialized_idempotency`). */
  readonly table?: string;
  /** Create the table when it is missing (default true); off for roles that may not run DDL. */
  readonly createSchema: boolean;
  readonly connectTimeoutMs: number;
}

// Two processes creating the table at once would race in the catalog: one of them waits.
const SCHEMA_LOCK = 7_349_120_812;

/**
 * Records in a PostgreSQL table, reached through a small pool of the library's
 * own (`pgPoolSize` connections, idle ones closed): never the lock sessions, which
 * are for locks, and never the app's work pool. Each statement is one short
 * autocommit round trip, bounded by `pgQueryTimeoutMs`. Expiry uses the server's
 * clock; expired rows are never read and are deleted by later writes (see
 * `idempotencyStatements`).
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  readonly statements: IdempotencyStatements;
  private readonly pool: Pool;
  private ready: Promise<void> | undefined;

  constructor(private readonly options: PostgresIdempotencyStoreOptions) {
    this.statements = idempotencyStatements(options.table);
    this.pool = new options.pg.Pool({
      ...options.config,
      // Not the lock sessions' name: those are counted by it.
      application_name: lockApplicationName({ applicationName: `nestjs-serialized-idempotency:${options.keyPrefix}` }, options.keyPrefix),
      max: IDEMPOTENCY_DEFAULTS.pgPoolSize,
      idleTimeoutMillis: 10_000,
      connectionTimeoutMillis: options.connectTimeoutMs,
      query_timeout: IDEMPOTENCY_DEFAULTS.pgQueryTimeoutMs,
      allowExitOnIdle: true,
    });
    // An idle connection that drops must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  async get(key: string): Promise<StoredResponse | undefined> {
    const rows = await this.query(key, this.statements.get, [this.rowKey(key)]);
    return rows.length ? decodeStoredResponse(String(rows[0][0])) : undefined;
  }

  async set(key: string, record: StoredResponse, ttlMs: number): Promise<void> {
    await this.query(key, this.statements.set, [this.rowKey(key), encodeStoredResponse(record), ttlMs]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private rowKey(key: string): string {
    return `${this.options.keyPrefix}:${key}`;
  }

  private async query(key: string, text: string, values: unknown[]): Promise<unknown[][]> {
    try {
      await (this.ready ??= this.prepare().catch((error) => {
        this.ready = undefined;
        throw error;
      }));
      return (await this.pool.query({ text, values, rowMode: 'array' })).rows;
    } catch (error) {
      throw new LockBackendError(`PostgreSQL cannot be used for idempotency records: ${(error as Error).message}`, { key, cause: error });
    }
  }

  /** Makes sure the table exists: created once if allowed, otherwise a message with the SQL to run. */
  private async prepare(): Promise<void> {
    const client = await this.pool.connect();
    try {
      const tableName = this.options.table ?? IDEMPOTENCY_DEFAULTS.pgTable;
      const { rows } = await client.query({ text: this.statements.exists, values: [this.statements.table], rowMode: 'array' });
      if (rows[0][0] === true) return;
      if (!this.options.createSchema) {
        throw new Error(
          `the idempotency table ${tableName} is missing and createSchema is off; create it once with:\n${this.statements.schema}`,
        );
      }
      try {
        await client.query('BEGIN');
        await client.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`);
        await client.query(this.statements.schema);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(
          `cannot create the idempotency table ${tableName} (${(error as Error).message}); create it once with:\n${this.statements.schema}`,
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
