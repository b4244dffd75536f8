/**
 * The record table under the PostgreSQL idempotency and tick stores
 * (libs/serialized/src/providers/postgres/postgres-record.table.ts), on a real server:
 * each case uses a table of its own, dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import * as pg from 'pg';
import { LockBackendError } from 'nestjs-serialized';
import { PostgresRecordTable, type RecordTableSchema } from '../../libs/serialized/src/providers/postgres/postgres-record.table';
import { TEST_DATABASE_URL } from '../support/services';

const admin = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
const created: string[] = [];

function schemaOf(name: string): RecordTableSchema {
  return {
    table: `"${name}"`,
    schema: `CREATE TABLE IF NOT EXISTS "${name}" (k text PRIMARY KEY, v text NOT NULL);`,
    exists: 'SELECT to_regclass($1) IS NOT NULL',
  };
}

function freshName(): string {
  const name = `record_table_${randomUUID().slice(0, 8)}`;
  created.push(name);
  return name;
}

function tableOf(name: string, createSchema: boolean, statements: RecordTableSchema = schemaOf(name)): PostgresRecordTable {
  return new PostgresRecordTable({
    pg,
    config: { connectionString: TEST_DATABASE_URL },
    what: 'sample',
    tableName: name,
    statements,
    createSchema,
    schemaLock: 7_349_120_999,
    applicationName: 'nestjs-serialized-record-table-test',
    max: 2,
    connectTimeoutMs: 5000,
    queryTimeoutMs: 5000,
  });
}

async function exists(name: string): Promise<boolean> {
  const { rows } = await admin.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [`"${name}"`]);
  return rows[0].found;
}

afterAll(async () => {
  for (const name of created) await admin.query(`DROP TABLE IF EXISTS "${name}"`);
  await admin.end();
});

describe('PostgresRecordTable', () => {
  it('with createSchema off, creates nothing, names the table and the SQL, and works once that SQL ran', async () => {
    const name = freshName();
    const table = tableOf(name, false);
    try {
      const error = await table.query(`SELECT v FROM "${name}" WHERE k = $1`, ['a'], 'order-1').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LockBackendError);
      const message = (error as Error).message;
      expect(message).toContain(`the sample table ${name} is missing and createSchema is off`);
      expect(message).toContain(schemaOf(name).schema);
      expect(message).toContain('"order-1"');
      expect(await exists(name)).toBe(false);

      // The user runs the documented SQL; the same instance finds the table without a restart.
      await admin.query(schemaOf(name).schema);
      await admin.query(`INSERT INTO "${name}" (k, v) VALUES ('a', 'one')`);
      expect(await table.query(`SELECT v FROM "${name}" WHERE k = $1`, ['a'])).toEqual([['one']]);
    } finally {
      await table.close();
    }
  });

  it('with createSchema on, five instances starting at once create the table once and all work', async () => {
    const name = freshName();
    const tables = Array.from({ length: 5 }, () => tableOf(name, true));
    try {
      const outcomes = await Promise.allSettled(
        tables.map((table, i) => table.query(`INSERT INTO "${name}" (k, v) VALUES ($1, $2)`, [`k${i}`, `v${i}`])),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${name}"`);
      expect(rows[0].n).toBe(5);
    } finally {
      await Promise.all(tables.map((table) => table.close()));
    }
  });

  it('says why the table could not be created, with the SQL to run, and changes nothing', async () => {
    const name = freshName();
    const broken = tableOf(name, true, { ...schemaOf(name), schema: `CREATE TABLE "${name}" (k nosuchtype);` });
    try {
      const error = await broken.query('SELECT 1', []).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toContain(`cannot create the sample table ${name} (type "nosuchtype" does not exist)`);
      expect(await exists(name)).toBe(false);
    } finally {
      await broken.close();
    }
  });
});
