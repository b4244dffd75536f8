import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { WorkerProcess } from '../support/processes';
import { TEST_DATABASE_URL } from '../support/services';
import { databaseTarget } from '../postgres/support/provider-set';
import { PgBouncer } from '../transaction/support/pgbouncer';
import type { ControlRow, ResultRow } from './reliability.scenarios';

/**
 * The reliability rows of transaction mode (docs/transactions.md): two app processes of
 * the transaction-mode rewards app (test/transaction/support/transaction-app.ts,
 * TypeORM), each claim a read-check-write in the app's transaction under
 * `@Serialized('userId', { transaction: true })`. The ledger is the rewards table:
 * a user with two claims is a duplicate execution.
 */
interface TxDeployment {
  urls: string[];
  appName: string;
  table: string;
  pg: Client;
  bouncer?: PgBouncer;
  close(): Promise<void>;
}

async function deploy(via: 'direct' | 'pgbouncer', poolSize = 5): Promise<TxDeployment> {
  const id = randomUUID().slice(0, 8);
  const appName = `rel-tx-${id}`;
  const table = `rel_tx_${id}`;
  const pg = new Client({ connectionString: TEST_DATABASE_URL });
  pg.on('error', () => undefined);
  await pg.connect();
  await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text NOT NULL, token bigint)`);
  let bouncer: PgBouncer | undefined;
  let databaseUrl = TEST_DATABASE_URL;
  if (via === 'pgbouncer') {
    bouncer = new PgBouncer({ ...databaseTarget(), database: new URL(TEST_DATABASE_URL).pathname.slice(1) || 'test' }, 8);
    await bouncer.start();
    databaseUrl = bouncer.url();
  }
  const url = `${databaseUrl}${databaseUrl.includes('?') ? '&' : '?'}application_name=${appName}`;
  const workers = ['a', 'b'].map((name) =>
    WorkerProcess.start(`tx-${name}`, 'test/transaction/workers/transaction-app.worker.ts', {
      ADAPTER: 'typeorm',
      DATABASE_URL: url,
      KEY_PREFIX: appName,
      TABLE: table,
      POOL_SIZE: String(poolSize),
    }),
  );
  const urls = (await Promise.all(workers.map((w) => w.waitFor((m) => m.type === 'ready', 60_000)))).map((m) => m.url as string);
  return {
    urls,
    appName,
    table,
    pg,
    bouncer,
    close: async () => {
      for (const worker of workers) if (worker.child.exitCode === null) worker.send({ type: 'close' });
      await Promise.all(workers.map((w) => w.exited));
      await bouncer?.stop();
      await pg.query(`DROP TABLE IF EXISTS ${table}`);
      await pg.end();
    },
  };
}

interface Outcome {
  statuses: number[];
  /** When each request answered (ms since the epoch). */
  at: number[];
}

/** `count` POSTs of `path`, spread over the processes, all at once. */
async function burst(d: TxDeployment, path: string, count: number): Promise<Outcome> {
  const at: number[] = [];
  const statuses = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      fetch(`${d.urls[i % d.urls.length]}${path}`, { method: 'POST' })
        .then(
          (r) => r.status,
          () => 0,
        )
        .then((status) => {
          at[i] = Date.now();
          return status;
        }),
    ),
  );
  return { statuses, at };
}

async function claimsPerUser(d: TxDeployment, prefix: string): Promise<Map<string, number>> {
  const { rows } = await d.pg.query<{ user_id: string; n: string }>(
    `SELECT user_id, count(*) AS n FROM ${d.table} WHERE user_id LIKE $1 GROUP BY user_id`,
    [`${prefix}%`],
  );
  return new Map(rows.map((r) => [r.user_id, Number(r.n)]));
}

/** Advisory locks and idle-in-transaction sessions of the app left after the run. */
async function leaked(d: TxDeployment): Promise<number> {
  const { rows } = await d.pg.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory'
      WHERE a.application_name = $1 AND (l.pid IS NOT NULL OR a.state LIKE 'idle in transaction%')`,
    [d.appName],
  );
  return Number(rows[0].n);
}

function row(fields: Pick<ResultRow, 'scenario' | 'load' | 'faults'> & Partial<ResultRow>, statuses: number[]): ResultRow {
  return {
    provider: 'postgres',
    sections: statuses.length,
    overlapsTold: 0,
    overlaps: 0,
    fencingViolations: 0,
    lostUpdates: 0,
    duplicates: 0,
    r429: statuses.filter((s) => s === 429).length,
    r503: statuses.filter((s) => s === 503).length,
    leaked: 0,
    ...fields,
  };
}

/** `duplicates` copies of one claim over two processes: one claim; the naive twin's control beside it. */
export async function transactionDuplicates(duplicates: number): Promise<{ row: ResultRow; control: ControlRow }> {
  const d = await deploy('direct');
  try {
    const user = `dup-${randomUUID().slice(0, 6)}`;
    const naiveUser = `naive-${user}`;
    const [serialized] = await Promise.all([
      burst(d, `/serialized/${user}`, duplicates),
      burst(d, `/naive/${naiveUser}`, Math.min(duplicates, 50)),
    ]);
    const claims = (await claimsPerUser(d, user)).get(user) ?? 0;
    const naiveClaims = (await claimsPerUser(d, naiveUser)).get(naiveUser) ?? 0;
    const other = serialized.statuses.filter((s) => s !== 201).length;
    return {
      row: row(
        {
          scenario: 'transaction mode: duplicate requests, one key',
          load: `2 processes (TypeORM, pool of 5 each) × ${duplicates} duplicates, 1 key`,
          faults: '—',
          duplicates: Math.max(0, claims - 1),
          lostUpdates: claims === 0 ? 1 : 0,
          leaked: await leaked(d),
          notes: `${claims} claim; ${serialized.statuses.length - other}×201${other ? `, ${other} other answers` : ''}`,
        },
        serialized.statuses,
      ),
      control: {
        scenario: 'naive daily reward in a TypeORM transaction (no lock)',
        provider: 'postgres',
        load: `2 processes × ${Math.min(duplicates, 50)} duplicates`,
        outcome: `${naiveClaims} rewards claimed`,
        wrong: Math.max(0, naiveClaims - 1),
      },
    };
  } finally {
    await d.close();
  }
}

/**
 * Rounds of duplicates of one user each; in every round the holder's server session
 * is terminated (pg_terminate_backend) while it holds: its transaction rolls back, the
 * next caller is granted, and the user still has exactly one claim.
 */
export async function transactionTerminatedSession(rounds: number, perRound: number): Promise<ResultRow> {
  const d = await deploy('direct');
  try {
    const prefix = `term-${randomUUID().slice(0, 6)}-`;
    const statuses: number[] = [];
    let terminated = 0;
    let recoveryMs = 0;
    for (let r = 0; r < rounds; r++) {
      const round = burst(d, `/serialized/${prefix}${r}`, perRound);
      // The holder: the session holding a granted advisory lock of this app.
      let killedAt = 0;
      for (let tries = 0; tries < 200 && !killedAt; tries++) {
        const { rows } = await d.pg.query<{ pid: number }>(
          `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1 LIMIT 1`,
          [d.appName],
        );
        if (rows[0]) {
          await d.pg.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
          killedAt = Date.now();
          terminated++;
        } else {
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      }
      const outcome = await round;
      statuses.push(...outcome.statuses);
      if (killedAt) {
        const after = outcome.statuses.map((s, i) => (s === 201 ? outcome.at[i] : Infinity)).filter((t) => t >= killedAt);
        if (after.length) recoveryMs = Math.max(recoveryMs, Math.min(...after) - killedAt);
      }
    }
    const claims = await claimsPerUser(d, prefix);
    const counts = Array.from({ length: rounds }, (_, r) => claims.get(`${prefix}${r}`) ?? 0);
    const failedSections = statuses.filter((s) => s === 500).length;
    return row(
      {
        scenario: 'transaction mode: holder session terminated',
        load: `2 processes (TypeORM) × ${rounds} rounds × ${perRound} duplicates`,
        faults: `${terminated} holders' sessions terminated (pg_terminate_backend) while holding`,
        duplicates: counts.reduce((n, c) => n + Math.max(0, c - 1), 0),
        lostUpdates: counts.filter((c) => c === 0).length,
        leaked: await leaked(d),
        recoveryMs,
        notes: `each terminated holder's transaction rolled back (its section failed: ${failedSections}×500); users with exactly one claim: ${counts.filter((c) => c === 1).length}/${rounds}`,
      },
      statuses,
    );
  } finally {
    await d.close();
  }
}

/**
 * Rounds of duplicates through PgBouncer (pool_mode = transaction); PgBouncer is
 * killed and restarted during one round: the calls in flight fail (503, or 500 for a
 * section whose statement failed), no user is claimed twice, and the rounds after
 * it serialize again.
 */
export async function transactionPgBouncerRestart(rounds: number, perRound: number): Promise<ResultRow> {
  const d = await deploy('pgbouncer');
  try {
    const prefix = `pgb-${randomUUID().slice(0, 6)}-`;
    const statuses: number[] = [];
    const faultRound = Math.floor(rounds / 2);
    let restartedAt = 0;
    let recoveryMs: number | undefined;
    for (let r = 0; r < rounds; r++) {
      const round = burst(d, `/serialized/${prefix}${r}`, perRound);
      if (r === faultRound) {
        await new Promise((resolve) => setTimeout(resolve, 30));
        await d.bouncer!.restart();
        restartedAt = Date.now();
      }
      const outcome = await round;
      statuses.push(...outcome.statuses);
      if (restartedAt && recoveryMs === undefined) {
        // The first success after the restart (a round that failed whole leaves it to the next round).
        const first = outcome.at.filter((t, i) => outcome.statuses[i] === 201 && t >= restartedAt);
        if (first.length) recoveryMs = Math.min(...first) - restartedAt;
      }
    }
    const claims = await claimsPerUser(d, prefix);
    const counts = Array.from({ length: rounds }, (_, r) => claims.get(`${prefix}${r}`) ?? 0);
    const after = counts.slice(faultRound + 1);
    return row(
      {
        scenario: 'transaction mode: PgBouncer restart under load',
        load: `2 processes (TypeORM) via PgBouncer (pool_mode = transaction) × ${rounds} rounds × ${perRound} duplicates`,
        faults: 'PgBouncer killed (SIGKILL) and restarted once',
        duplicates: counts.reduce((n, c) => n + Math.max(0, c - 1), 0),
        // A round that lost its claim to the restart is a fault's outcome, not a lost update; the rounds after it must claim once each.
        lostUpdates: after.filter((c) => c === 0).length,
        leaked: await leaked(d),
        recoveryMs,
        notes: `${statuses.filter((s) => s === 500).length}×500 (sections whose statement failed), ${statuses.filter((s) => s === 0).length} connections reset; rounds after the restart claimed once each: ${after.filter((c) => c === 1).length}/${after.length}`,
      },
      statuses,
    );
  } finally {
    await d.close();
  }
}
