import { connectionOf, recognisedQuery } from './transaction-query.adapter';

describe('recognisedQuery', () => {
  const rows = [{ token: '1' }];

  it('sends through each adapter by its shape, and reads the rows back', async () => {
    const calls: unknown[][] = [];
    const record =
      (result: unknown) =>
      (...args: unknown[]) => {
        calls.push(args);
        return Promise.resolve(result);
      };
    const knex = Object.assign(() => undefined, { raw: record({ rows }), isTransaction: true });
    const shapes: [string, unknown, unknown[]][] = [
      ['prisma', { $queryRawUnsafe: record(rows) }, ['SELECT $1, $2', 'a', 'b']],
      ['knex', knex, ['SELECT ?, ?', ['a', 'b']]],
      ['pg-promise', { any: record(rows), none: record([]), oneOrNone: record(null) }, ['SELECT $1, $2', ['a', 'b']]],
      ['typeorm / pg', { query: record(rows) }, ['SELECT $1, $2', ['a', 'b']]],
      ['pg result', { query: record({ rows }) }, ['SELECT $1, $2', ['a', 'b']]],
    ];
    for (const [name, tx, expected] of shapes) {
      calls.length = 0;
      const query = recognisedQuery(tx);
      expect({ name, recognised: query !== undefined }).toEqual({ name, recognised: true });
      await expect(query!(tx, 'SELECT $1, $2', ['a', 'b'])).resolves.toEqual(rows);
      expect({ name, args: calls[0] }).toEqual({ name, args: expected });
    }
  });

  it('sends a compiled raw query through Kysely and a statement through the pg client of a Drizzle session', async () => {
    const compiled: unknown[] = [];
    const kysely = { selectFrom: () => undefined, executeQuery: (q: unknown) => (compiled.push(q), Promise.resolve({ rows })) };
    await expect(recognisedQuery(kysely)!(kysely, 'SELECT $1', [1])).resolves.toEqual(rows);
    expect(compiled[0]).toMatchObject({ sql: 'SELECT $1', parameters: [1], query: { kind: 'RawNode' } });
    const drizzle = {
      execute: () => undefined,
      session: { client: { query: (text: string, values: unknown[]) => Promise.resolve({ rows: [{ text, values }] }) } },
    };
    await expect(recognisedQuery(drizzle)!(drizzle, 'SELECT $1', [2])).resolves.toEqual([{ text: 'SELECT $1', values: [2] }]);
  });

  it('recognises nothing else', () => {
    for (const tx of [undefined, null, 42, 'tx', {}, { execute: () => undefined }]) expect(recognisedQuery(tx)).toBeUndefined();
  });
});

describe('connectionOf', () => {
  it("finds the pg client under TypeORM's query runner and a Drizzle session, or none", () => {
    const client = { on: () => undefined, off: () => undefined, query: () => undefined, processID: 1 };
    expect(connectionOf({ queryRunner: { databaseConnection: client } })).toBe(client);
    expect(connectionOf({ session: { client } })).toBe(client);
    expect(connectionOf(client)).toBe(client);
    expect(connectionOf({ query: () => undefined })).toBeUndefined();
  });
});
