/**
 * `transaction` of `@Serialized` and `LockService.run`: run the section inside a
 * transaction of the app's own `TransactionHost` (`@nestjs-cls/transactional`) that
 * first takes `pg_advisory_xact_lock` on the key (docs/transactions.md). `true`
 * uses the default host; `{ connectionName }` a named one.
 */
export type TransactionOption = boolean | { readonly connectionName?: string };

/**
 * Runs one statement in the transaction `tx` (what `txHost.tx` is for the app's
 * adapter) and returns its rows as objects. Only needed for an adapter the library
 * does not recognise (TypeORM, Prisma, Drizzle, Kysely, Knex, pg-promise and pg
 * are). `sql` uses `$1`, `$2`, … placeholders.
 */
export type TransactionQuery = (tx: unknown, sql: string, params: readonly unknown[]) => Promise<readonly Record<string, unknown>[]>;

/** Module option `transaction` of `SerializedModule.forRoot()`. */
export interface TransactionModuleOptions {
  /** How to send a statement through an adapter that is not recognised by its shape. */
  query?: TransactionQuery;
}

/** The connection name of `option`, or `undefined` for the default host. @internal */
export function connectionNameOf(option: TransactionOption): string | undefined {
  return typeof option === 'object' && option !== null ? option.connectionName : undefined;
}

/** The problem line of an invalid `transaction` option, or `undefined`. @internal */
export function transactionOptionProblem(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  if (typeof value === 'object' && value !== null) {
    const name = (value as { connectionName?: unknown }).connectionName;
    const keys = Object.keys(value);
    if ((name === undefined || (typeof name === 'string' && name !== '')) && keys.every((k) => k === 'connectionName')) return undefined;
  }
  let shown: string;
  try {
    shown = JSON.stringify(value) ?? String(value);
  } catch {
    shown = String(value);
  }
  return `transaction=${shown} is invalid: accepts true, false or { connectionName: string }`;
}

/**
 * Why `concurrency` > 1 is refused in transaction mode: a transaction lock of
 * PostgreSQL is shared or exclusive, never "N at once". @internal
 */
export function concurrencyInTransactionProblem(concurrency: number): string {
  return (
    `concurrency=${concurrency} is not available in transaction mode: PostgreSQL's transaction locks hold a key ` +
    'shared or alone, never N at once (use shared: true for readers, or the postgres driver without transaction)'
  );
}
