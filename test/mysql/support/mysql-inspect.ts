import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { TEST_MYSQL_URL } from '../../support/services';

/**
 * A plain connection for looking at the server from outside the provider: who
 * holds a named lock (`IS_USED_LOCK`), whether a session is alive, and `KILL` of
 * sessions the test itself identified (by the lock they hold), never others.
 */
export class MysqlInspector {
  private constructor(private readonly connection: Connection) {}

  static async connect(url = TEST_MYSQL_URL): Promise<MysqlInspector> {
    const connection = await createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true });
    connection.on('error', () => undefined);
    return new MysqlInspector(connection);
  }

  async query<R extends Record<string, unknown> = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<R[]> {
    const [rows] = await this.connection.query<RowDataPacket[]>(sql, values);
    return rows as unknown as R[];
  }

  /** The connection id holding the named lock `name`, or null when nobody does. */
  async holderOf(name: string): Promise<number | null> {
    const [row] = await this.query<{ holder: string | number | null }>('SELECT IS_USED_LOCK(?) AS holder', [name]);
    return row.holder === null ? null : Number(row.holder);
  }

  /** How many of `names` some session holds now. */
  async held(names: Iterable<string>): Promise<number> {
    let count = 0;
    for (const name of names) if ((await this.holderOf(name)) !== null) count++;
    return count;
  }

  /** Whether the session `id` still exists. */
  async alive(id: number): Promise<boolean> {
    const [row] = await this.query<{ n: number }>('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?', [id]);
    return Number(row.n) === 1;
  }

  /** The statement session `id` runs now ('' when idle). */
  async statementOf(id: number): Promise<string> {
    const [row] = await this.query<{ info: string | null }>('SELECT INFO AS info FROM information_schema.PROCESSLIST WHERE ID = ?', [id]);
    return row?.info ?? '';
  }

  /** Sessions running `GET_LOCK` on `name` (waiting in the server). */
  async waitingFor(name: string): Promise<number> {
    const [row] = await this.query<{ n: number }>(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT GET_LOCK(%' AND INFO LIKE ?",
      [`%${name}%`],
    );
    return Number(row.n);
  }

  /** Ends session `id` (`KILL`), as an operator or a failover would. */
  async kill(id: number): Promise<void> {
    await this.query('KILL ?', [id]);
  }

  async close(): Promise<void> {
    await this.connection.end();
  }
}

/** A key prefix of its own for one test (so parallel suites never share a lock name). */
export function uniquePrefix(tag: string): string {
  return `nsz-${tag}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
