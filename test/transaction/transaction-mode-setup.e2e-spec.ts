import { Controller, Injectable, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, Serialized, SerializedConfigError, SerializedModule } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { createTransactionApp } from './support/transaction-app';

/** Transaction mode's start-up check, and its fencing tokens beside the postgres driver. */
describe('transaction mode: set-up and fencing', () => {
  it('a transaction handler in an app without ClsModule and its transactional plugin stops start-up naming what to install and import', async () => {
    @Controller()
    class Claims {
      @Post(':userId')
      @Serialized('userId', { transaction: true })
      claim(@Param('userId') userId: string) {
        return userId;
      }
    }
    @Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], controllers: [Claims] })
    class NoClsModule {}
    const failure = await NestFactory.create(NoClsModule, { logger: false, abortOnError: false }).then(
      (app) =>
        app.init().then(
          () => app.close().then(() => undefined),
          (error: unknown) => app.close().then(() => error),
        ),
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SerializedConfigError);
    const message = (failure as Error).message;
    expect(message).toContain('Claims#claim');
    expect(message).toContain('TransactionHost');
    expect(message).toContain('ClsModule.forRoot');
    expect(message).toContain('ClsPluginTransactional');
  });

  it('transaction mode on a BullMQ processor stops start-up (jobs are parked, not run in a request)', async () => {
    @Injectable()
    class Reports {
      @Serialized('data.userId', { transaction: true })
      process(job: { data: { userId: string } }) {
        return job.data.userId;
      }
    }
    Reflect.defineMetadata('bullmq:processor_metadata', { name: 'reports' }, Reports);
    @Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], providers: [Reports] })
    class ProcessorModule {}
    const failure = await NestFactory.createApplicationContext(ProcessorModule, { logger: false, abortOnError: false }).then(
      (app) => app.close().then(() => undefined),
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SerializedConfigError);
    expect((failure as Error).message).toContain('Reports#process: transaction mode does not apply to BullMQ jobs');
  });

  it('a bad transaction option is refused when the decorator is applied', () => {
    expect(() => {
      class Bad {
        @Serialized('id', { transaction: { connectionName: 3 } as never })
        m(_id: string) {
          return _id;
        }
      }
      return Bad;
    }).toThrow(/transaction=\{"connectionName":3\} is invalid/);
  });

  it('fencing tokens strictly increase per key across transaction-mode holders and postgres-driver holders, which exclude each other', async () => {
    const pg = await PgInspector.connect();
    const keyPrefix = uniquePrefix('tx-fence');
    const table = `tx_fence_${process.pid}`;
    await pg.query(`DROP TABLE IF EXISTS ${table}`);
    await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text, token bigint, inside int)`);
    const { app } = await createTransactionApp({
      adapter: 'typeorm',
      databaseUrl: TEST_DATABASE_URL,
      keyPrefix,
      table,
      poolSize: 4,
      driver: 'postgres',
    });
    await app.init();
    try {
      const locks = app.get(LockService);
      let inside = 0;
      let overlaps = 0;
      const section = (via: string) => async (lock: { fencingToken: bigint }) => {
        if (++inside > 1) overlaps++;
        await new Promise((resolve) => setTimeout(resolve, 3));
        await pg.query(`INSERT INTO ${table} (user_id, token) VALUES ($1, $2)`, [via, lock.fencingToken.toString()]);
        inside--;
      };
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2 === 0 ? locks.run('reward:f', section('tx'), { transaction: true }) : locks.run('reward:f', section('driver')),
        ),
      );
      const rows = await pg.query<{ user_id: string; token: string }>(`SELECT user_id, token FROM ${table} ORDER BY id`);
      expect(overlaps).toBe(0);
      expect(rows).toHaveLength(40);
      expect(new Set(rows.map((r) => r.user_id))).toEqual(new Set(['tx', 'driver']));
      for (let i = 1; i < rows.length; i++) expect(BigInt(rows[i].token)).toBeGreaterThan(BigInt(rows[i - 1].token));
    } finally {
      await app.close();
      await pg.query(`DROP TABLE IF EXISTS ${table}`);
      await pg.close();
    }
  });
});
