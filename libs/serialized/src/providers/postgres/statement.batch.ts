import type { QueryArrayConfig } from 'pg';

/** What a batch needs of its session (a `LockSession`; named here so the two files do not import each other). */
export interface BatchedSession {
  readonly busy: boolean;
  query(config: QueryArrayConfig): Promise<unknown[]>;
  queryRows(config: QueryArrayConfig | (() => QueryArrayConfig)): Promise<unknown[][]>;
}

interface OpenBatch {
  readonly keys: string[];
  readonly callers: { resolve: (row: unknown[]) => void; reject: (error: unknown) => void }[];
}

/**
 * One kind of per-key statement (try a lock, unlock) on a shared session, batched:
 * a call made while the session runs another statement joins the batch queued
 * behind it, and the whole batch goes as one statement over an array of keys. So a
 * session's throughput does not stop at one key per round trip when many keys are
 * tried or released at once (a burst of distinct keys on a busy host), while a lone
 * call still costs one plain statement. Rows come back in the order of the keys.
 */
export class StatementBatch {
  private open: OpenBatch | undefined;

  constructor(
    private readonly session: BatchedSession,
    /** One key → one row. */
    private readonly single: (key: string) => QueryArrayConfig,
    /** `$1` bigint[] of keys → rows `[ordinality, ...the single statement's columns]`. */
    private readonly many: (keys: string[]) => QueryArrayConfig,
  ) {}

  run(key: string): Promise<unknown[]> {
    if (!this.session.busy) return this.session.query(this.single(key));
    let batch = this.open;
    if (!batch) {
      const made: OpenBatch = { keys: [], callers: [] };
      batch = this.open = made;
      this.session
        .queryRows(() => {
          // Its turn came: later calls start the next batch.
          if (this.open === made) this.open = undefined;
          return made.keys.length === 1 ? this.single(made.keys[0]) : this.many(made.keys);
        })
        .then(
          (rows) => this.answer(made, rows),
          (error: unknown) => {
            // Never sent (the session ended first): its turn never came, so later calls must not join it.
            if (this.open === made) this.open = undefined;
            made.callers.forEach((caller) => caller.reject(error));
          },
        );
    }
    const joined = batch;
    return new Promise((resolve, reject) => {
      joined.keys.push(key);
      joined.callers.push({ resolve, reject });
    });
  }

  private answer(batch: OpenBatch, rows: unknown[][]): void {
    if (batch.keys.length === 1) return batch.callers[0].resolve(rows[0] ?? []);
    for (const row of rows) batch.callers[Number(row[0]) - 1]?.resolve(row.slice(1));
    // A row missing from the answer must not leave its caller waiting.
    const missing = new Error('PostgreSQL answered a batched lock statement without a row for every key');
    for (const caller of batch.callers) caller.reject(missing);
  }
}
