import type { ClientConfig, Pool } from 'pg';
import { LockBackendError } from '../errors';
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
 * their own: never the lock sessions, never the app's pool. Each step is one
 * autocommit statement on the server's clock (`TICK_STATEMENTS`).
 */
export class PostgresTickStore implements TickStore {
  private readonly pool: Pool;
  private ready: Promise<void> | undefined;

  constructor(private readonly options: PostgresTickStoreOptions) {
    this.pool = new options.pg.Pool({
      ...options.config,
      application_name: `nestjs-serialized-ticks:${options.keyPrefix}`.slice(0, 63),
      max: POOL_SIZE,
      idleTimeoutMillis: 10_000,
      connectionTimeoutMillis: options.connectTimeoutMs,
      query_timeout: QUERY_TIMEOUT_MS,
      allowExitOnIdle: true,
    });
    // An idle connection that drops must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  async claim({ name, tick, owner, leaseMs, maxAheadMs }: TickClaimRequest): Promise<TickClaim> {
    const [row] = await this.query(TICK_STATEMENTS.claim, [this.rowKey(name), tick, leaseMs, owner, maxAheadMs]);
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
    return (await this.query(TICK_STATEMENTS.renew, [this.rowKey(name), owner, leaseMs])).length === 1;
  }

  async finish(name: string, owner: string): Promise<void> {
    await this.query(TICK_STATEMENTS.finish, [this.rowKey(name), owner]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private rowKey(name: string): string {
    return `${this.options.keyPrefix}:${name}`;
  }

  private async query(text: string, values: unknown[]): Promise<unknown[][]> {
    try {
      await (this.ready ??= this.prepare().catch((error) => {
        this.ready = undefined;
        throw error;
      }));
      return (await this.pool.query({ text, values, rowMode: 'array' })).rows;
    } catch (error) {
      throw new LockBackendError(`PostgreSQL cannot be used for tick records: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Makes sure the table exists: created once if allowed, otherwise a message with the SQL to run. */
  private async prepare(): Promise<void> {
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query({ text: TICK_STATEMENTS.exists, values: [TICK_STATEMENTS.table], rowMode: 'array' });
      if (rows[0][0] === true) return;
      const table = ONCE_PER_TICK_DEFAULTS.pgTable;
      if (!this.options.createSchema)
        throw new Error(`the tick table ${table} is missing and createSchema is off; create it once with:\n${TICK_STATEMENTS.schema}`);
      try {
        await client.query('BEGIN');
        await client.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`);
        await client.query(TICK_STATEMENTS.schema);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(
          `cannot create the tick table ${table} (${(error as Error).message}); create it once with:\n${TICK_STATEMENTS.schema}`,
          { cause: error },
        );
      }
    } finally {
      client.release();
    }
  }
}
