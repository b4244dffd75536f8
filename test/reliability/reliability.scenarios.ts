import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import { childEntry } from '../support/child-entry';
import type { WorkerProcess } from '../support/processes';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { TcpProxy } from '../postgres/support/tcp-proxy';
import {
  ask,
  freePort,
  Ledger,
  pgLeftovers,
  redisKeysUnder,
  sleep,
  startWorker,
  ThrowawayRedis,
  type Driver,
  type Stats,
} from './support/environment';

const ROOT = path.resolve(__dirname, '..', '..');

/** One row of the report's results table. */
export interface ResultRow {
  scenario: string;
  provider: Driver;
  load: string;
  faults: string;
  sections: number;
  /** Sections entered while a holder whose lock was lost, and who was told so, had not left yet (its write skipped or refused by the fence). */
  overlapsTold: number;
  /** Sections entered while another holder nobody had told was inside: two holders of one lock. Must be 0. */
  overlaps: number;
  fencingViolations: number;
  lostUpdates: number;
  duplicates: number;
  r429: number;
  r503: number;
  leaked: number;
  recoveryMs?: number;
  notes?: string;
  /** Only for the arrival-order scenario. */
  orderViolations?: number;
}

/** A naive endpoint under the same load, which does lose updates. */
export interface ControlRow {
  scenario: string;
  provider: Driver;
  load: string;
  outcome: string;
  wrong: number;
}

/** Sizes of the short form (inside `npm test`) and the full form (`npm run reliability`). */
export interface Sizes {
  seedDuplicates: number;
  oneKeyDuplicates: number;
  manyKeys: number;
  opsPerKey: number;
  restartSections: number;
  soakMs: number;
  faultEveryMs: number;
}

export const SHORT: Sizes = {
  seedDuplicates: 10,
  oneKeyDuplicates: 200,
  manyKeys: 500,
  opsPerKey: 8,
  restartSections: 40,
  soakMs: 20_000,
  faultEveryMs: 10_000,
};
export const FULL: Sizes = {
  seedDuplicates: 20,
  oneKeyDuplicates: 1000,
  manyKeys: 10_000,
  opsPerKey: 8,
  restartSections: 200,
  soakMs: 120_000,
  faultEveryMs: 20_000,
};

const sum = (stats: Stats[], field: keyof Stats) => stats.reduce((total, s) => total + (Number(s[field]) || 0), 0);

function prefix(): string {
  return `rel-${randomUUID().slice(0, 8)}`;
}

function workerEnv(ledger: Ledger, driver: Driver, keyPrefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...ledger.workerEnv(),
    SERIALIZED_DRIVER: driver,
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_URL: TEST_DATABASE_URL,
    REL_PREFIX: keyPrefix,
    ...extra,
  };
}

async function closeAll(workers: WorkerProcess[]): Promise<{ stats: Stats[]; leaked: number }> {
  const closed = await Promise.all(
    workers.map((w) =>
      w.child.exitCode === null && w.child.signalCode === null ? ask(w, { type: 'close' }, 'closed').catch(() => undefined) : undefined,
    ),
  );
  await Promise.all(workers.map((w) => w.stop()));
  const stats = closed.filter(Boolean).map((m) => m!.stats as Stats);
  return { stats, leaked: closed.reduce((n, m) => n + Number(m?.leaked ?? 0), 0) };
}

async function leftovers(driver: Driver, keyPrefix: string, redisUrl = TEST_REDIS_URL): Promise<number> {
  if (driver === 'redis') return redisKeysUnder(redisUrl, keyPrefix);
  if (driver === 'postgres') {
    const pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    try {
      const { locks, sessions } = await pgLeftovers(pg, keyPrefix);
      return locks + sessions;
    } finally {
      await pg.end();
    }
  }
  return 0;
}

function row(
  base: Omit<
    ResultRow,
    'sections' | 'overlaps' | 'overlapsTold' | 'duplicates' | 'r429' | 'r503' | 'fencingViolations' | 'lostUpdates' | 'leaked'
  >,
  stats: Stats[],
  verdict: { lostUpdates: number; fencingViolations: number; overlaps?: { overlaps: number; excused: number } },
  leaked: number,
): ResultRow {
  return {
    ...base,
    sections: sum(stats, 'sections'),
    overlapsTold: verdict.overlaps?.excused ?? 0,
    overlaps: sum(stats, 'overlaps') + (verdict.overlaps?.overlaps ?? 0),
    duplicates: sum(stats, 'duplicates'),
    r429: sum(stats, 'busy'),
    r503: sum(stats, 'backend') + sum(stats, 'lost'),
    fencingViolations: verdict.fencingViolations,
    lostUpdates: verdict.lostUpdates,
    leaked,
  };
}

/** The seeds' races through the example app: N processes × M duplicates; exactly one reward and one resource. */
export async function seedsRace(driver: 'redis' | 'postgres', sizes: Sizes): Promise<{ row: ResultRow; controls: ControlRow[] }> {
  const keyPrefix = prefix();
  const entry = childEntry('src/main.ts');
  const apps: { child: ChildProcess; url: string }[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const child = spawn(process.execPath, entry.args, {
        cwd: ROOT,
        env: {
          ...process.env,
          ...entry.env,
          PORT: String(port),
          SERIALIZED_DRIVER: driver,
          APP_STORE: driver,
          SERIALIZED_KEY_PREFIX: keyPrefix,
          REDIS_URL: TEST_REDIS_URL,
          DATABASE_URL: TEST_DATABASE_URL,
          REPORTS_ENABLED: 'false',
        },
        stdio: 'ignore',
      });
      apps.push({ child, url: `http://127.0.0.1:${port}` });
    }
    await Promise.all(apps.map((app) => untilUp(app.url, app.child)));
    const urls = apps.map((a) => a.url);
    const fire = (pathOf: string, body?: object) =>
      Promise.all(
        Array.from({ length: sizes.seedDuplicates }, (_, i) =>
          fetch(`${urls[i % urls.length]}${pathOf}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body ?? {}),
          }).then((r) => r.status),
        ),
      );
    const user = prefix();
    const naive = prefix();
    const [rewards, naiveRewards, resources, naiveResources] = [
      await fire(`/users/${user}/rewards/daily`),
      await fire(`/naive/users/${naive}/rewards/daily`),
      await fire(`/users/${user}/resources`, { name: 'report' }),
      await fire(`/naive/users/${naive}/resources`, { name: 'report' }),
    ];
    const getJson = async (p: string) => (await (await fetch(`${urls[0]}${p}`)).json()) as Record<string, unknown> & unknown[];
    const credited = Number((await getJson(`/users/${user}/rewards`)).rewardCount);
    const naiveCredited = Number((await getJson(`/users/${naive}/rewards`)).rewardCount);
    const created = ((await getJson(`/users/${user}/resources`)) as unknown[]).length;
    const naiveCreated = ((await getJson(`/users/${naive}/resources`)) as unknown[]).length;
    const statuses = [...rewards, ...resources];
    const load = `2 app processes × ${sizes.seedDuplicates} duplicates, daily reward + create resource`;
    return {
      row: {
        scenario: 'seeds: duplicate requests via the example app',
        provider: driver,
        load,
        faults: '—',
        sections: statuses.filter((s) => s < 300).length + statuses.filter((s) => s === 409).length,
        overlapsTold: 0,
        overlaps: 0,
        fencingViolations: 0,
        lostUpdates: Math.max(0, 1 - credited) + Math.max(0, 1 - created),
        duplicates: Math.max(0, credited - 1) + Math.max(0, created - 1),
        r429: statuses.filter((s) => s === 429).length,
        r503: statuses.filter((s) => s === 503).length,
        leaked: 0,
        notes: `${credited} reward credited, ${created} resource created; statuses ${summary(statuses)}`,
      },
      controls: [
        {
          scenario: 'naive daily reward',
          provider: driver,
          load,
          outcome: `${naiveCredited} rewards credited (${summary(naiveRewards)})`,
          wrong: Math.max(0, naiveCredited - 1),
        },
        {
          scenario: 'naive create resource',
          provider: driver,
          load,
          outcome: `${naiveCreated} resources created (${summary(naiveResources)})`,
          wrong: Math.max(0, naiveCreated - 1),
        },
      ],
    };
  } finally {
    await Promise.all(
      apps.map(
        ({ child }) =>
          new Promise<void>((resolve) =>
            child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM')),
          ),
      ),
    );
  }
}

function summary(statuses: number[]): string {
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${n}×${s}`).join(', ');
}

async function untilUp(url: string, child: ChildProcess): Promise<void> {
  // Readiness, not a clock: until it answers, or exits.
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${url}: the app exited during start-up`);
    try {
      if ((await fetch(`${url}/users/ping/rewards`)).ok) return;
    } catch {
      // not yet
    }
    await sleep(100);
  }
}

/** A holder killed (SIGKILL) or paused (SIGSTOP past its lease, then SIGCONT) while a second process waits. */
export async function holderFault(driver: 'redis' | 'postgres', fault: 'SIGKILL' | 'SIGSTOP'): Promise<ResultRow> {
  const ledger = new Ledger();
  await ledger.open();
  const keyPrefix = prefix();
  const key = 'k';
  await ledger.seed([key]);
  const leaseMs = 2000;
  const env = workerEnv(ledger, driver, keyPrefix, { REL_LEASE_MS: String(leaseMs) });
  const holder = await startWorker('holder', env);
  const next = await startWorker('next', env);
  try {
    const holdMs = fault === 'SIGKILL' ? 60_000 : 3000;
    holder.send({ type: 'hold', key, holdMs });
    await holder.waitForType('holding', 120_000);
    const faultAt = Date.now();
    let paused = 0;
    if (fault === 'SIGKILL') {
      holder.kill('SIGKILL');
      await holder.exited;
      await ledger.leaveDetector(key);
    } else {
      holder.kill('SIGSTOP');
      paused = leaseMs * 3;
    }
    const ran = ask(next, { type: 'run', keys: [key], perKey: 1, holdMs: 0, shared: true, waitTimeoutMs: 60_000 }, 'ran');
    if (paused) {
      await sleep(paused);
      holder.kill('SIGCONT');
    }
    const nextStats = (await ran).stats as Stats;
    const recoveryMs = Date.now() - faultAt;
    const stats = [nextStats];
    let notes = '';
    if (fault === 'SIGSTOP') {
      const held = await holder.waitForType('held', 120_000);
      const holderStats = held.stats as Stats;
      // The paused holder's section overlapped in wall time by design (its lease ran out); what matters is that its late write was refused.
      stats.push({ ...holderStats, overlaps: 0 });
      notes =
        driver === 'redis'
          ? `holder paused ${paused} ms > lease ${leaseMs} ms; its late write ${holderStats.rejected ? 'was rejected by the fence' : 'was accepted'}`
          : `holder paused ${paused} ms: its session kept the lock, so the next caller waited for SIGCONT (no lease to run out)`;
    }
    const closed = await closeAll([holder, next]);
    const verdict = { ...(await ledger.verdict([key])), overlaps: await ledger.overlaps() };
    const leaked = closed.leaked + (await leftovers(driver, keyPrefix));
    return row(
      {
        scenario: fault === 'SIGKILL' ? 'SIGKILL the holder' : 'SIGSTOP the holder past its lease, then SIGCONT',
        provider: driver,
        load: '2 processes, 1 key',
        faults: fault === 'SIGKILL' ? 'holder killed while holding' : `holder stopped ${paused / 1000} s`,
        recoveryMs,
        notes,
      },
      stats,
      verdict,
      leaked,
    );
  } finally {
    await Promise.all([holder.stop(), next.stop()]);
    await ledger.close();
  }
}

/** Sections from two processes while the backend goes away and comes back (Redis: a throwaway server restarted; PostgreSQL: proxy cut + pg_terminate_backend). */
export async function backendRestart(driver: 'redis' | 'postgres', sizes: Sizes, kind: 'restart' | 'drop'): Promise<ResultRow> {
  const ledger = new Ledger();
  await ledger.open();
  const keyPrefix = prefix();
  const keys = Array.from({ length: 4 }, (_, i) => `k${i}`);
  await ledger.seed(keys);
  const redis = driver === 'redis' ? new ThrowawayRedis(await freePort()) : undefined;
  const proxy =
    driver === 'postgres' ? new TcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port || 5432) }) : undefined;
  await redis?.start();
  await proxy?.start();
  const env = workerEnv(ledger, driver, keyPrefix, redis ? { REDIS_URL: redis.url } : { DATABASE_URL: proxy!.url(TEST_DATABASE_URL) });
  const workers = [await startWorker('a', env), await startWorker('b', env)];
  try {
    const perKey = Math.ceil(sizes.restartSections / keys.length / workers.length);
    const runs = workers.map((w) => ask(w, { type: 'run', keys, perKey, holdMs: 20, shared: true, waitTimeoutMs: 30_000 }, 'ran'));
    await sleep(500);
    const faultAt = Date.now();
    await fault(driver, kind, redis, proxy, keyPrefix);
    const stats = (await Promise.all(runs)).map((m) => m.stats as Stats);
    // Recovery: how long until a fresh section succeeds after the fault.
    let recoveryMs: number | undefined;
    for (;;) {
      const probe = (
        await ask(workers[0], { type: 'run', keys: ['probe'], perKey: 1, holdMs: 0, shared: true, waitTimeoutMs: 5000 }, 'ran')
      ).stats as Stats;
      if (probe.sections > sum(stats.slice(0, 1), 'sections')) {
        recoveryMs = Date.now() - faultAt;
        break;
      }
      if (Date.now() - faultAt > 60_000) break;
      await sleep(100);
    }
    const closed = await closeAll(workers);
    const verdict = { ...(await ledger.verdict(keys)), overlaps: await ledger.overlaps() };
    const leaked = closed.leaked + (await leftovers(driver, keyPrefix, redis?.url));
    const faultText =
      kind === 'restart'
        ? driver === 'redis'
          ? 'throwaway redis-server killed and restarted (no persistence)'
          : 'TCP proxy cut + pg_terminate_backend of the lock sessions'
        : driver === 'redis'
          ? 'CLIENT KILL of the lock connections'
          : 'pg_terminate_backend of the lock sessions';
    return row(
      {
        scenario: kind === 'restart' ? 'backend restart under load' : 'dropped session under load',
        provider: driver,
        load: `2 processes × ${keys.length} keys × ${perKey}, 20 ms holds`,
        faults: faultText,
        recoveryMs,
      },
      closed.stats.length ? closed.stats : stats,
      verdict,
      leaked,
    );
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
    await proxy?.stop();
    await ledger.close();
  }
}

/** One fault of the kind `backendRestart` injects. */
export async function fault(
  driver: Driver,
  kind: 'restart' | 'drop',
  redis: ThrowawayRedis | undefined,
  proxy: TcpProxy | undefined,
  keyPrefix: string,
): Promise<void> {
  if (driver === 'redis' && redis) {
    if (kind === 'restart') {
      await redis.stop();
      await sleep(500);
      await redis.start();
    } else {
      const { Redis } = await import('ioredis');
      const admin = new Redis(redis.url);
      const list = String(await admin.client('LIST'));
      const mine = Number(/id=(\d+)/.exec(list.split('\n').find((l) => l.includes('cmd=client')) ?? '')?.[1]);
      for (const line of list.split('\n')) {
        const id = Number(/id=(\d+)/.exec(line)?.[1]);
        if (id && id !== mine) await admin.client('KILL', 'ID', String(id)).catch(() => undefined);
      }
      admin.disconnect();
    }
    return;
  }
  if (driver === 'postgres') {
    if (kind === 'restart') proxy?.cutAll();
    const pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await pg.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [keyPrefix]);
    await pg.end();
  }
}

/** 1,000 duplicates on one key from one process: every one runs, alone, in arrival order. */
export async function oneKeyDuplicates(driver: Driver, sizes: Sizes): Promise<ResultRow> {
  // The last of 1,000 waits for 999 sections: its wait budget grows with the queue (the order is what this checks).
  return singleProcess(
    driver,
    'duplicates on one key, served in arrival order',
    [`dup`],
    sizes.oneKeyDuplicates,
    `1 process, ${sizes.oneKeyDuplicates} duplicates on 1 key (waitTimeoutMs 120 s)`,
    true,
    120_000,
  );
}

/** 10,000 keys × 8 from one process. */
export async function manyKeys(driver: Driver, sizes: Sizes): Promise<ResultRow> {
  const keys = Array.from({ length: sizes.manyKeys }, (_, i) => `m${i}`);
  return singleProcess(
    driver,
    `${sizes.manyKeys.toLocaleString('en-US')} keys × ${sizes.opsPerKey}`,
    keys,
    sizes.opsPerKey,
    `1 process, ${(sizes.manyKeys * sizes.opsPerKey).toLocaleString('en-US')} acquisitions at once (defaults)`,
    false,
  );
}

async function singleProcess(
  driver: Driver,
  scenario: string,
  keys: string[],
  perKey: number,
  load: string,
  checkOrder: boolean,
  waitTimeoutMs?: number,
): Promise<ResultRow> {
  const ledger = new Ledger();
  await ledger.open();
  const keyPrefix = prefix();
  const worker = await startWorker(scenario, workerEnv(ledger, driver, keyPrefix));
  try {
    const ran = (await ask(worker, { type: 'run', keys, perKey, holdMs: 0, shared: false, checkOrder, waitTimeoutMs }, 'ran'))
      .stats as Stats;
    const closed = await closeAll([worker]);
    const leaked = closed.leaked + (await leftovers(driver, keyPrefix));
    // Local detector: the values each key ended with against the sections that wrote.
    const notes = checkOrder ? `${ran.orderViolations} of ${perKey} served out of arrival order` : undefined;
    return {
      ...row(
        { scenario, provider: driver, load, faults: '—', notes },
        [ran],
        { lostUpdates: ran.localLost ?? 0, fencingViolations: ran.rejected },
        leaked,
      ),
      orderViolations: ran.orderViolations,
    };
  } finally {
    await worker.stop();
    await ledger.close();
  }
}

/** A soak: two processes run sections for `soakMs` with a fault every `faultEveryMs`; afterwards nothing is left and the heap is back. */
export async function soak(driver: 'redis' | 'postgres', sizes: Sizes): Promise<ResultRow> {
  const ledger = new Ledger();
  await ledger.open();
  const keyPrefix = prefix();
  const keys = Array.from({ length: 8 }, (_, i) => `s${i}`);
  await ledger.seed([...keys, 'probe']);
  const redis = driver === 'redis' ? new ThrowawayRedis(await freePort()) : undefined;
  const proxy =
    driver === 'postgres' ? new TcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port || 5432) }) : undefined;
  await redis?.start();
  await proxy?.start();
  const env = workerEnv(ledger, driver, keyPrefix, {
    ...(redis ? { REDIS_URL: redis.url } : { DATABASE_URL: proxy!.url(TEST_DATABASE_URL) }),
    NODE_OPTIONS: '--expose-gc',
  });
  const workers = [await startWorker('soak-a', env), await startWorker('soak-b', env)];
  try {
    const batch = { type: 'run', keys, perKey: 4, holdMs: 5, shared: true, waitTimeoutMs: 10_000 };
    await Promise.all(workers.map((w) => ask(w, batch, 'ran')));
    const heapBefore = await Promise.all(workers.map(async (w) => Number((await ask(w, { type: 'heap' }, 'heap')).heapUsed)));
    const start = Date.now();
    let faults = 0;
    const loops = workers.map(async (w) => {
      let last: Stats | undefined;
      while (Date.now() - start < sizes.soakMs) last = (await ask(w, batch, 'ran')).stats as Stats;
      return last!;
    });
    const faulting = (async () => {
      for (let at = sizes.faultEveryMs; at < sizes.soakMs; at += sizes.faultEveryMs) {
        await sleep(Math.max(0, start + at - Date.now()));
        await fault(driver, faults % 2 === 0 ? 'restart' : 'drop', redis, proxy, keyPrefix);
        faults++;
      }
    })();
    const stats = await Promise.all(loops);
    await faulting;
    // Idle now: let the providers settle (no fixed wait for a verdict: the checks below poll until clean).
    const heapAfter = await Promise.all(workers.map(async (w) => Number((await ask(w, { type: 'heap' }, 'heap')).heapUsed)));
    const growth = Math.max(...heapAfter.map((after, i) => (after - heapBefore[i]) / heapBefore[i]));
    const closed = await closeAll(workers);
    const verdict = { ...(await ledger.verdict(keys)), overlaps: await ledger.overlaps() };
    const leaked = closed.leaked + (await leftovers(driver, keyPrefix, redis?.url));
    return row(
      {
        scenario: `soak ${Math.round(sizes.soakMs / 1000)} s`,
        provider: driver,
        load: `2 processes × ${keys.length} keys, continuous`,
        faults: `${faults} faults, one every ${sizes.faultEveryMs / 1000} s (restart / dropped sessions, alternating)`,
        notes: `heap after/before: ${heapAfter.map((a, i) => `${(a / 1e6).toFixed(1)}/${(heapBefore[i] / 1e6).toFixed(1)} MB`).join(', ')} (max growth ${(growth * 100).toFixed(1)} %)`,
      },
      stats,
      verdict,
      leaked,
    );
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
    await proxy?.stop();
    await ledger.close();
  }
}
