import type { ClientConfig, Pool } from 'pg';
import { lockApplicationName } from '../../providers/postgres/postgres-lock-provider.options';
import { PostgresRecordTable } from '../../providers/postgres/postgres-record.table';
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
 * own (`pgPoolSize` connections: see `PostgresRecordTable`). Each statement is one
 * short autocommit round trip, bounded by `pgQueryTimeoutMs`. Expiry uses the
 * server's clock; expired rows are never read and are deleted by later writes (see
 * `idempotencyStatements`).
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  readonly statements: IdempotencyStatements;
  private readonly table: PostgresRecordTable;

  constructor(private readonly options: PostgresIdempotencyStoreOptions) {
    this.statements = idempotencyStatements(options.table);
    this.table = new PostgresRecordTable({
      pg: options.pg,
      config: options.config,
      what: 'idempotency',
      tableName: options.table ?? IDEMPOTENCY_DEFAULTS.pgTable,
      statements: this.statements,
      createSchema: options.createSchema,
      schemaLock: SCHEMA_LOCK,
      // Not the lock sessions' name: those are counted by it.
      applicationName: lockApplicationName({ applicationName: `nestjs-serialized-idempotency:${options.keyPrefix}` }, options.keyPrefix),
      max: IDEMPOTENCY_DEFAULTS.pgPoolSize,
      connectTimeoutMs: options.connectTimeoutMs,
      queryTimeoutMs: IDEMPOTENCY_DEFAULTS.pgQueryTimeoutMs,
    });
  }

  async get(key: string): Promise<StoredResponse | undefined> {
    const rows = await this.table.query(this.statements.get, [this.rowKey(key)], key);
    return rows.length ? decodeStoredResponse(String(rows[0][0])) : undefined;
  }

  async set(key: string, record: StoredResponse, ttlMs: number): Promise<void> {
    await this.table.query(this.statements.set, [this.rowKey(key), encodeStoredResponse(record), ttlMs], key);
  }

  close(): Promise<void> {
    return this.table.close();
  }

  private rowKey(key: string): string {
    return `${this.options.keyPrefix}:${key}`;
  }
}
