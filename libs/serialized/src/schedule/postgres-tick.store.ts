import type { ClientConfig, Pool } from 'pg';
import { PostgresRecordTable } from '../providers/postgres/postgres-record.table';
import { ONCE_PER_TICK_DEFAULTS } from './once-per-tick.defaults';
import { TICK_STATEMENTS } from './postgres-tick.statements';
import type { TickClaim, TickClaimRequest, TickStore } from './tick.store';

/** What the PostgreSQL provider lends the store: how its lock sessions connect. */
export interface PostgresTickStoreOptions {
  /** The `pg` module (loaded by the provider). */
  readonly pg: { Pool: new (config: object) => Pool };
  /** The lock sessions' connection settings (URL, or the app pool's settings). */
  readonly config: ClientConfig;
  readonly keyPrefix: string;
  /** Create the table when it is missing (the module's `postgres.createSchema`). */
  readonly createSchema: boolean;
  readonly connectTimeoutMs: number;
}

// Two instances creating the table at once would race in the catalog: one of them waits.
const SCHEMA_LOCK = 7_349_120_838;
// Two connections at most (claims are rare and short); idle ones close.
const POOL_SIZE = 2;
const QUERY_TIMEOUT_MS = 5000;

/**
 * Tick records in a PostgreSQL table (`nestjs_serialized_ticks`, created if missing
 * unless `createSchema` is off), one row per name, reached through a small pool of
 * their own (see `PostgresRecordTable`). Each step is one autocommit statement on
 * the server's clock (`TICK_STATEMENTS`).
 */
export class PostgresTickStore implements TickStore {
  private readonly table: PostgresRecordTable;

  constructor(private readonly options: PostgresTickStoreOptions) {
    this.table = new PostgresRecordTable({
      pg: options.pg,
      config: options.config,
      what: 'tick',
      tableName: ONCE_PER_TICK_DEFAULTS.pgTable,
      statements: TICK_STATEMENTS,
      createSchema: options.createSchema,
      schemaLock: SCHEMA_LOCK,
      applicationName: `nestjs-serialized-ticks:${options.keyPrefix}`.slice(0, 63),
      max: POOL_SIZE,
      connectTimeoutMs: options.connectTimeoutMs,
      queryTimeoutMs: QUERY_TIMEOUT_MS,
    });
  }

  async claim({ name, tick, owner, leaseMs, maxAheadMs }: TickClaimRequest): Promise<TickClaim> {
    const [row] = await this.table.query(TICK_STATEMENTS.claim, [this.rowKey(name), tick, leaseMs, owner, maxAheadMs]);
    const [claimed, now, lastTick, runningUntil] = row as [number, string, string | null, string | null];
    const backendNow = Number(now);
    if (claimed === 1) return { claimed: true, backendNow };
    // The row as it was when the statement began: a claim that won meanwhile left no trace in it.
    if (lastTick !== null && Number(lastTick) >= tick) return { claimed: false, reason: 'already_run', backendNow };
    if (tick > backendNow + maxAheadMs) return { claimed: false, reason: 'clock_ahead', backendNow };
    if (runningUntil !== null && Number(runningUntil) > backendNow) return { claimed: false, reason: 'overlap', backendNow };
    return { claimed: false, reason: 'already_run', backendNow };
  }

  async renew(name: string, owner: string, leaseMs: number): Promise<boolean> {
    return (await this.table.query(TICK_STATEMENTS.renew, [this.rowKey(name), owner, leaseMs])).length === 1;
  }

  async finish(name: string, owner: string): Promise<void> {
    await this.table.query(TICK_STATEMENTS.finish, [this.rowKey(name), owner]);
  }

  close(): Promise<void> {
    return this.table.close();
  }

  private rowKey(name: string): string {
    return `${this.options.keyPrefix}:${name}`;
  }
}
