import { transactionDuplicates, transactionPgBouncerRestart, transactionTerminatedSession } from '../reliability/transaction.scenarios';

/**
 * The reliability rows of transaction mode (test/reliability/transaction.scenarios.ts),
 * at small sizes: what `npm run reliability` reports for them must hold here too.
 */
describe('transaction mode reliability rows (small sizes)', () => {
  it('duplicates over two processes: one claim, nothing left behind; the naive twin claims more', async () => {
    const { row, control } = await transactionDuplicates(100);
    expect({ duplicates: row.duplicates, lost: row.lostUpdates, leaked: row.leaked, r503: row.r503, r429: row.r429 }).toEqual({
      duplicates: 0,
      lost: 0,
      leaked: 0,
      r503: 0,
      r429: 0,
    });
    expect(control.wrong).toBeGreaterThan(0);
  }, 90_000);

  it("a holder's session terminated while it holds: rolled back, the next caller claims, no user twice", async () => {
    const row = await transactionTerminatedSession(3, 8);
    expect(row.faults).toMatch(/^[1-9]\d* holders/);
    expect({ duplicates: row.duplicates, lost: row.lostUpdates, leaked: row.leaked }).toEqual({ duplicates: 0, lost: 0, leaked: 0 });
    expect(row.recoveryMs).toBeDefined();
  }, 90_000);

  it('a PgBouncer restart under load: no user claimed twice, the rounds after it claim once each', async () => {
    const row = await transactionPgBouncerRestart(4, 8);
    expect({ duplicates: row.duplicates, lost: row.lostUpdates, leaked: row.leaked }).toEqual({ duplicates: 0, lost: 0, leaked: 0 });
    expect(row.recoveryMs).toBeDefined();
  }, 90_000);
});
