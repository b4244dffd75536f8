/**
 * Two statements of one lock session ran on different server sessions:
 * a pooler in transaction or statement mode (PgBouncer `pool_mode = transaction`)
 * sits between the library and PostgreSQL. Session advisory locks cannot work
 * there: the lock stays on a server session that other clients then use.
 */
export class SessionChangedError extends Error {
  override readonly name = 'SessionChangedError';

  constructor(
    readonly firstPid: number,
    readonly laterPid: number,
  ) {
    super(
      `The PostgreSQL session changed between two statements on one connection (backend pid ${firstPid}, then ${laterPid}): ` +
        'the connections of the lock sessions go through a pooler in transaction or statement mode (e.g. PgBouncer pool_mode=transaction), ' +
        'which breaks session advisory locks. Point the lock pool at PostgreSQL directly or at a session-mode pool ' +
        '(postgres.connectionString); see docs/providers/postgres.md#pgbouncer',
    );
  }
}
