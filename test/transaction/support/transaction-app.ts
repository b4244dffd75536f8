import 'reflect-metadata';
import {
  Controller,
  Get,
  HttpException,
  Injectable,
  Module,
  Param,
  Post,
  Query,
  type INestApplication,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterDrizzleOrm } from '@nestjs-cls/transactional-adapter-drizzle-orm';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { ClsModule } from 'nestjs-cls';
import { LockService, Serialized, SerializedLock, SerializedModule, type Lock, type LockSet } from 'nestjs-serialized';
import { Pool, type Client } from 'pg';
import { DataSource } from 'typeorm';

/** The two adapters the transaction-mode suites run against. */
export type AdapterName = 'typeorm' | 'drizzle';

export interface TransactionAppOptions {
  adapter: AdapterName;
  databaseUrl: string;
  keyPrefix: string;
  /** Table of claimed rewards (created by the suite: user_id text, token bigint). */
  table: string;
  /** Table of accounts for the key-set routes (`id text, balance int`), when the suite made one. */
  accounts?: string;
  /** The app's own pool size. */
  poolSize?: number;
  waitTimeoutMs?: number;
  driver?: 'memory' | 'postgres';
}

/** A statement through the app's adapter, in its own API (TypeORM's query, Drizzle's sql). */
export type Run = (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

const DRIZZLE = Symbol('drizzle');

function drizzleSql(text: string, params: unknown[]): SQL {
  const parts = text.split(/\$(\d+)/);
  const chunks: SQL[] = [];
  parts.forEach((part, i) => chunks.push(i % 2 === 0 ? sql.raw(part) : sql`${params[Number(part) - 1]}`));
  return sql.join(chunks);
}

export function runOf(adapter: AdapterName, txHost: TransactionHost<never>): Run {
  if (adapter === 'typeorm') return (text, params = []) => (txHost.tx as unknown as DataSource['manager']).query(text, params);
  return async (text, params = []) =>
    (await (txHost.tx as unknown as NodePgDatabase).execute(drizzleSql(text, params))).rows as Record<string, unknown>[];
}

/** Builds the app (not listening): rewards claimed in transaction mode, a naive twin, and probes. */
export async function createTransactionApp(options: TransactionAppOptions): Promise<{
  app: INestApplication;
  pool: () => { total: number; idle: number; waiting: number };
  /** The most 'end' listeners on one client of the app's pool (pg-pool's own clients list). */
  endListeners: () => number;
}> {
  const { table } = options;
  const max = options.poolSize ?? 10;
  let poolStats: () => { total: number; idle: number; waiting: number } = () => ({ total: 0, idle: 0, waiting: 0 });
  let appPool: Pool | undefined;
  let appDataSource: DataSource | undefined;

  @Injectable()
  class Rewards {
    readonly run: Run;
    constructor(readonly txHost: TransactionHost<never>) {
      this.run = runOf(options.adapter, txHost);
    }

    /** Read, think, write: two at once would both find nothing and both insert. */
    async claim(userId: string, lock?: Lock): Promise<{ claimed: boolean; token?: string }> {
      const rows = await this.run(`SELECT count(*)::int AS n FROM ${table} WHERE user_id = $1`, [userId]);
      if (Number(rows[0].n) > 0) return { claimed: false };
      await this.run('SELECT pg_sleep(0.15)');
      await this.run(`INSERT INTO ${table} (user_id, token) VALUES ($1, $2)`, [userId, lock ? lock.fencingToken.toString() : null]);
      return { claimed: true, token: lock?.fencingToken.toString() };
    }

    @Serialized('userId', { transaction: true, scope: 'reward' })
    claimInService(userId: string): Promise<{ claimed: boolean }> {
      return this.claim(userId);
    }
  }

  @Controller()
  class RewardsController {
    constructor(
      private readonly rewards: Rewards,
      private readonly locks: LockService,
    ) {}

    @Post('serialized/:userId')
    @Serialized('userId', { transaction: true, scope: 'reward' })
    serialized(@Param('userId') userId: string, @SerializedLock() lock: Lock) {
      return this.rewards.claim(userId, lock);
    }

    @Post('naive/:userId')
    naive(@Param('userId') userId: string) {
      return this.rewards.txHost.withTransaction(() => this.rewards.claim(userId));
    }

    @Post('service/:userId')
    service(@Param('userId') userId: string) {
      return this.rewards.claimInService(userId);
    }

    /** Holds the key for `ms` inside its transaction; tells the server pid of its transaction. */
    @Post('hold/:userId')
    @Serialized('userId', { transaction: true, scope: 'reward' })
    async hold(@Param('userId') userId: string, @Query('ms') ms: string, @SerializedLock() lock: Lock) {
      const [row] = await this.rewards.run('SELECT pg_backend_pid() AS pid');
      await this.rewards.run('SELECT pg_sleep($1::float8 / 1000)', [Number(ms)]);
      return { pid: row.pid, token: lock.fencingToken.toString(), aborted: lock.signal.aborted };
    }

    @Post('reject/:userId')
    @Serialized('userId', { transaction: true, scope: 'reward', mode: 'reject' })
    reject(@Param('userId') userId: string) {
      return this.rewards.claim(userId);
    }

    @Post('short/:userId')
    @Serialized('userId', { transaction: true, scope: 'reward', waitTimeoutMs: 300 })
    short(@Param('userId') userId: string) {
      return this.rewards.claim(userId);
    }

    /** Writes, then fails: the write must be rolled back and the error reach the client unchanged. */
    @Post('fail/:userId')
    @Serialized('userId', { transaction: true, scope: 'reward' })
    async fail(@Param('userId') userId: string) {
      await this.rewards.run(`INSERT INTO ${table} (user_id, token) VALUES ($1, NULL)`, [userId]);
      throw new HttpException({ teapot: true }, 418);
    }

    /** An unrelated query on the app's pool, outside any transaction. */
    @Get('ping')
    async ping() {
      const started = Date.now();
      await this.rewards.txHost.withoutTransaction(() => this.rewards.run('SELECT 1'));
      return { ms: Date.now() - started, pool: poolStats() };
    }

    /** A transfer holding both accounts in the app's transaction (a key set). */
    @Post('transfer/:fromId/:toId')
    @Serialized(['params.fromId', 'params.toId'], { transaction: true, scope: 'account' })
    transfer(@Param('fromId') from: string, @Param('toId') to: string, @Query('amount') amount: string, @SerializedLock() locks: LockSet) {
      return this.move(from, to, Number(amount ?? 1), locks);
    }

    @Post('transfer-reject/:fromId/:toId')
    @Serialized(['params.fromId', 'params.toId'], { transaction: true, scope: 'account', mode: 'reject' })
    transferOrReject(@Param('fromId') from: string, @Param('toId') to: string, @SerializedLock() locks: LockSet) {
      return this.move(from, to, 1, locks);
    }

    @Post('transfer-short/:fromId/:toId')
    @Serialized(['params.fromId', 'params.toId'], { transaction: true, scope: 'account', waitTimeoutMs: 300 })
    transferShort(@Param('fromId') from: string, @Param('toId') to: string, @SerializedLock() locks: LockSet) {
      return this.move(from, to, 1, locks);
    }

    @Get('run-transfer/:fromId/:toId')
    runTransfer(@Param('fromId') from: string, @Param('toId') to: string) {
      return this.locks.run([`account:${from}`, `account:${to}`], (locks) => this.move(from, to, 1, locks), { transaction: true });
    }

    /**
     * A key set in reject mode inside a transaction the app began (joined): its failure
     * must leave no advisory lock held by that transaction, which goes on.
     */
    @Post('joined-reject/:fromId/:toId')
    joinedReject(@Param('fromId') from: string, @Param('toId') to: string) {
      return this.rewards.txHost.withTransaction(async () => {
        const error = await this.locks
          .run([`account:${from}`, `account:${to}`], () => 'ran', { transaction: true, mode: 'reject' })
          .then(
            () => undefined,
            (e: unknown) => (e as Error).name,
          );
        const [row] = await this.rewards.run(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
        );
        return { error, advisoryLocksHeld: Number(row.n) };
      });
    }

    /** Read both balances, think, write both: two sections on one account at once would lose an update. */
    private async move(from: string, to: string, amount: number, locks: LockSet) {
      const rows = await this.rewards.run(`SELECT id, balance FROM ${options.accounts} WHERE id IN ($1, $2)`, [from, to]);
      const balance = Object.fromEntries(rows.map((row) => [row.id as string, Number(row.balance)]));
      await this.rewards.run('SELECT pg_sleep(0.005)');
      await this.rewards.run(`UPDATE ${options.accounts} SET balance = $2 WHERE id = $1`, [from, balance[from] - amount]);
      await this.rewards.run(`UPDATE ${options.accounts} SET balance = $2 WHERE id = $1`, [to, balance[to] + amount]);
      return { keys: locks.map((lock) => lock.key), tokens: locks.map((lock) => lock.fencingToken.toString()) };
    }

    @Get('run/:userId')
    runProgrammatic(@Param('userId') userId: string) {
      return this.locks.run(`reward:${userId}`, (lock) => this.rewards.claim(userId, lock), { transaction: true });
    }
  }

  const adapterModule =
    options.adapter === 'typeorm'
      ? {
          provide: DataSource,
          useFactory: async () => {
            const dataSource = new DataSource({ type: 'postgres', url: options.databaseUrl, extra: { max }, entities: [] });
            await dataSource.initialize();
            appDataSource = dataSource;
            const pool = (dataSource.driver as unknown as { master: Pool }).master;
            appPool = pool;
            poolStats = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
            return dataSource;
          },
        }
      : {
          provide: DRIZZLE,
          useFactory: () => {
            const pool = new Pool({ connectionString: options.databaseUrl, max });
            // An idle connection dropped (a PgBouncer restart) must not crash the app, as in any app on pg's Pool.
            pool.on('error', () => undefined);
            // Nor one dropped while checked out between two statements (pg-pool listens only to idle clients).
            pool.on('connect', (client) => client.on('error', () => undefined));
            appPool = pool;
            poolStats = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
            return drizzle(pool);
          },
        };

  /**
   * The app's pool ends with the app, as in an app of the docs: in
   * `onApplicationShutdown`, after `SerializedModule`'s drain (`beforeApplicationShutdown`)
   * let the holders finish their transactions. (Nest's application object cannot
   * be patched: its proxy ignores assignments, so a wrapped `app.close` never ran.)
   */
  @Module({ providers: [adapterModule], exports: [adapterModule.provide] })
  class DatabaseModule implements OnApplicationShutdown {
    async onApplicationShutdown(): Promise<void> {
      const pool = appPool;
      appPool = undefined;
      if (options.adapter === 'typeorm') await appDataSource?.destroy();
      else await pool?.end();
    }
  }

  const adapter =
    options.adapter === 'typeorm'
      ? new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource })
      : new TransactionalAdapterDrizzleOrm<NodePgDatabase>({ drizzleInstanceToken: DRIZZLE });

  @Module({
    imports: [
      DatabaseModule,
      ClsModule.forRoot({ global: true, plugins: [new ClsPluginTransactional({ imports: [DatabaseModule], adapter })] }),
      SerializedModule.forRoot({
        driver: options.driver ?? 'memory',
        keyPrefix: options.keyPrefix,
        waitTimeoutMs: options.waitTimeoutMs ?? 20_000,
        ...(options.driver === 'postgres' ? { postgres: { connectionString: options.databaseUrl } } : {}),
      }),
    ],
    controllers: [RewardsController],
    providers: [Rewards],
  })
  class AppModule {}

  const app = await NestFactory.create(AppModule, { logger: false, abortOnError: false });
  const endListeners = () =>
    Math.max(0, ...((appPool as unknown as { _clients?: Client[] })?._clients ?? []).map((client) => client.listenerCount('end')));
  return { app, pool: () => poolStats(), endListeners };
}
