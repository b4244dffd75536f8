/**
 * A transaction-mode section was asked to join a transaction whose isolation is
 * REPEATABLE READ or SERIALIZABLE: its snapshot may predate the lock, so the
 * section would read state older than the previous holder's commit. A mistake in
 * the app, not a busy key: it passes to the app's filters (500).
 */
export class TransactionIsolationError extends Error {
  override readonly name = 'TransactionIsolationError';

  constructor(
    readonly key: string,
    readonly isolation: string,
    handler?: string,
  ) {
    super(
      `Lock "${key}"${handler ? ` (in ${handler})` : ''} cannot be taken inside the active ${isolation.toUpperCase()} transaction: ` +
        'its snapshot may predate the lock. Call it outside that transaction (the library then begins a READ COMMITTED one), ' +
        'or make the outer transaction READ COMMITTED (docs/transactions.md, "Isolation")',
    );
  }
}
