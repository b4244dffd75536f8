import type { TransactionQuery } from './transaction-options.interface';

type AnyFn = (...args: unknown[]) => unknown;
type Shape = Record<string, unknown>;

const isFn = (value: unknown): value is AnyFn => typeof value === 'function';
const rowsOf = (result: unknown): readonly Record<string, unknown>[] => {
  if (Array.isArray(result)) return result as Record<string, unknown>[];
  const rows = (result as { rows?: unknown } | null)?.rows;
  if (Array.isArray(rows)) return rows as Record<string, unknown>[];
  throw new TypeError('the statement returned no rows array');
};

/**
 * How a statement is sent through `tx`, recognised by the transaction object's
 * shape (no import of any ORM: each is an optional peer of the app, not of the
 * library). `undefined` when nothing matches: the module option `transaction.query`
 * is then needed.
 */
export function recognisedQuery(tx: unknown): TransactionQuery | undefined {
  if (tx === null || (typeof tx !== 'object' && typeof tx !== 'function')) return undefined;
  const t = tx as Shape;
  // Prisma: an interactive transaction client.
  if (isFn(t.$queryRawUnsafe))
    return (c, sql, params) => Promise.resolve((c as Shape & { $queryRawUnsafe: AnyFn }).$queryRawUnsafe(sql, ...params)).then(rowsOf);
  // Knex: the transaction is a function with raw(); its placeholders are `?`.
  if (typeof tx === 'function' && isFn(t.raw) && 'isTransaction' in t) {
    return (c, sql, params) =>
      Promise.resolve((c as unknown as Shape & { raw: AnyFn }).raw(sql.replace(/\$\d+/g, '?'), params)).then(rowsOf);
  }
  // Kysely: a Transaction runs a compiled query (the shape of CompiledQuery.raw).
  if (isFn(t.executeQuery) && isFn(t.selectFrom)) {
    return (c, sql, params) =>
      Promise.resolve(
        (c as Shape & { executeQuery: AnyFn }).executeQuery({
          sql,
          parameters: params,
          query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
          queryId: { queryId: 'nestjs-serialized' },
        }),
      ).then(rowsOf);
  }
  // Drizzle: the transaction's session holds the driver client of its connection.
  const session = t.session as Shape | undefined;
  if (isFn(t.execute) && session && typeof session === 'object') {
    const client = session.client as Shape | undefined;
    if (client && isFn(client.query))
      return (c, sql, params) =>
        Promise.resolve(((c as Shape).session as { client: { query: AnyFn } }).client.query(sql, params)).then(rowsOf);
    if (client && isFn(client.unsafe))
      return (c, sql, params) =>
        Promise.resolve(((c as Shape).session as { client: { unsafe: AnyFn } }).client.unsafe(sql, params)).then(rowsOf);
  }
  // pg-promise: a task/transaction context.
  if (isFn(t.any) && isFn(t.none) && isFn(t.oneOrNone))
    return (c, sql, params) => Promise.resolve((c as Shape & { any: AnyFn }).any(sql, params)).then(rowsOf);
  // TypeORM's EntityManager and a pg client both answer query(text, values): rows, or a result with rows.
  if (isFn(t.query)) return (c, sql, params) => Promise.resolve((c as Shape & { query: AnyFn }).query(sql, params)).then(rowsOf);
  return undefined;
}

/** The event emitter of the connection `tx` runs on, when its shape shows it (TypeORM, Drizzle over pg, pg). */
export function connectionOf(tx: unknown): { on: AnyFn; off?: AnyFn; removeListener?: AnyFn } | undefined {
  if (tx === null || typeof tx !== 'object') return undefined;
  const t = tx as Shape;
  const candidates = [(t.queryRunner as Shape | undefined)?.databaseConnection, (t.session as Shape | undefined)?.client, tx];
  for (const candidate of candidates) {
    const c = candidate as Shape | undefined;
    if (c && isFn(c.on) && isFn(c.query) && (isFn(c.off) || isFn(c.removeListener)) && 'processID' in c) return c as never;
  }
  return undefined;
}
