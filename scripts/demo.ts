/**
 * `npm run demo [-- --instances 2] [-- --driver redis|postgres]`
 *
 * Boots the example app (in this process, or as N OS processes sharing one
 * backend), fires 20 concurrent duplicate requests at each naive and each
 * protected endpoint (`@Serialized`, and `@Idempotent` for the payment), prints
 * what happened, and exits non-zero if a protected outcome is wrong.
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { INestApplication } from '@nestjs/common';
import net from 'node:net';
import { loadAppConfig } from '../src/config/app.config';
import { readDigestRuns } from '../src/digest/digest-demo';
import { runReportsDemo } from '../src/reports';

const DUPLICATES = 20;
const REPORTS = 4;
/** Short reports, so the demo stays quick; each still takes long enough to overlap if unserialized. */
const REPORT_DURATION_MS = '400';
/** The nightly digest runs every second in the demo, so its ticks can be counted in seconds. */
const DIGEST_CRON = '* * * * * *';
/** Every-second digest ticks watched at least, whatever the other scenarios took. */
const DIGEST_MIN_TICKS = 3;

interface Args {
  instances: number;
  driver: string | undefined;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { instances: 1, driver: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=');
    const value = inline ?? argv[++i];
    if (flag === '--instances') args.instances = Number(value);
    else if (flag === '--driver') args.driver = value;
    else throw new Error(`Unknown option ${argv[i]}; accepted: --instances N, --driver memory|redis|postgres`);
  }
  if (!Number.isInteger(args.instances) || args.instances < 1 || args.instances > 8) {
    throw new Error('--instances accepts an integer from 1 to 8');
  }
  if (args.driver && !['memory', 'redis', 'postgres'].includes(args.driver)) {
    throw new Error('--driver accepts memory, redis or postgres');
  }
  return args;
}

/** Where the app runs: base URLs, round-robin, and how to stop it. */
interface Deployment {
  urls: string[];
  stop(): Promise<void>;
}

async function startInProcess(reports: boolean, transactionalRewards: boolean): Promise<Deployment> {
  const base = loadAppConfig();
  // Loaded here, not at the top: the digest job reads DIGEST_CRON when its class is defined.
  process.env.DIGEST_CRON = DIGEST_CRON;
  const { createApp } = await import('../src/app.factory');
  const app: INestApplication = await createApp({
    logger: ['error', 'warn'],
    reports,
    digest: true,
    config: { reports: { ...base.reports, durationMs: Number(REPORT_DURATION_MS) }, transactionalRewards },
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { urls: [url], stop: () => app.close() };
}

async function startProcesses(count: number, reports: boolean, transactionalRewards: boolean): Promise<Deployment> {
  const root = path.resolve(__dirname, '..');
  const children: ChildProcess[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    // The instances run the way this script runs: compiled JavaScript (the test
    // build, `npm run build`) starts them as JavaScript, ts-node as TypeScript.
    const child = spawn(process.execPath, [...process.execArgv, path.join(root, 'src', `main${path.extname(__filename)}`)], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        REPORTS_ENABLED: String(reports),
        REPORT_DURATION_MS,
        TX_REWARDS_ENABLED: String(transactionalRewards),
        DIGEST_ENABLED: 'true',
        DIGEST_CRON,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    urls.push(`http://127.0.0.1:${port}`);
  }
  const stop = async (): Promise<void> => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
  };
  try {
    await Promise.all(urls.map((url) => waitUntilUp(url, children)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { urls, stop };
}

/**
 * A port the OS just handed out as free. Not a random one: fetch refuses some
 * ports outright (6000, 5060, ... the Fetch standard's "bad ports"), and a random
 * pick could also land on a service's port.
 */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Waits until the instance answers HTTP. What ends the wait is readiness or the
 * instance exiting, not a clock: a busy host may take long to boot two instances.
 * The outer bound only catches an instance that hangs without exiting.
 */
async function waitUntilUp(url: string, children: ChildProcess[]): Promise<void> {
  const hungAfter = Date.now() + 300_000;
  for (;;) {
    if (children.some((c) => c.exitCode !== null)) throw new Error('An app instance exited during start-up (see its output above)');
    try {
      const response = await fetch(`${url}/users/ping/rewards`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > hungAfter) throw new Error(`${url} neither answered nor exited within 5 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function fire(urls: string[], pathOf: string, body?: object): Promise<number[]> {
  return Promise.all(
    Array.from({ length: DUPLICATES }, (_, i) =>
      fetch(`${urls[i % urls.length]}${pathOf}`, {
        method: 'POST',
        headers: body ? { 'content-type': 'application/json' } : {},
        body: body ? JSON.stringify(body) : undefined,
      }).then((response) => response.status),
    ),
  );
}

const count = (statuses: number[], status: number): number => statuses.filter((s) => s === status).length;
const getJson = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;

interface Row {
  scenario: string;
  requests: string;
  naive: string;
  serialized: string;
  ok: boolean;
}

async function rewardScenario(urls: string[]): Promise<Row> {
  const naiveUser = `demo-${randomUUID().slice(0, 8)}`;
  const serializedUser = `demo-${randomUUID().slice(0, 8)}`;
  const [naive, serialized] = await Promise.all([
    fire(urls, `/naive/users/${naiveUser}/rewards/daily`),
    fire(urls, `/users/${serializedUser}/rewards/daily`),
  ]);
  const naiveState = await getJson<{ rewardCount: number }>(`${urls[0]}/users/${naiveUser}/rewards`);
  const serializedState = await getJson<{ rewardCount: number }>(`${urls[0]}/users/${serializedUser}/rewards`);
  return {
    scenario: 'daily reward (once per 24 h)',
    requests: `${DUPLICATES} × POST …/rewards/daily`,
    naive: `${naiveState.rewardCount} rewards credited (${count(naive, 201)}×201)`,
    serialized: `${serializedState.rewardCount} reward credited (${count(serialized, 201)}×201, ${count(serialized, 409)}×409)`,
    ok: serializedState.rewardCount === 1 && count(serialized, 201) === 1 && count(serialized, 409) === DUPLICATES - 1,
  };
}

/** Transaction mode (docs/transactions.md): the same reward with its state in PostgreSQL, each claim in a TypeORM transaction. */
async function transactionalRewardScenario(urls: string[]): Promise<Row> {
  const naiveUser = `demo-${randomUUID().slice(0, 8)}`;
  const serializedUser = `demo-${randomUUID().slice(0, 8)}`;
  const [naive, serialized] = await Promise.all([
    fire(urls, `/naive/tx/users/${naiveUser}/rewards/daily`),
    fire(urls, `/tx/users/${serializedUser}/rewards/daily`),
  ]);
  const naiveState = await getJson<{ rewardCount: number }>(`${urls[0]}/tx/users/${naiveUser}/rewards`);
  const serializedState = await getJson<{ rewardCount: number }>(`${urls[0]}/tx/users/${serializedUser}/rewards`);
  return {
    scenario: 'daily reward in a TypeORM transaction (lock inside it)',
    requests: `${DUPLICATES} × POST /tx/…/rewards/daily`,
    naive: `${naiveState.rewardCount} rewards credited (${count(naive, 201)}×201)`,
    serialized: `${serializedState.rewardCount} reward credited (${count(serialized, 201)}×201, ${count(serialized, 409)}×409)`,
    ok: serializedState.rewardCount === 1 && count(serialized, 201) === 1 && count(serialized, 409) === DUPLICATES - 1,
  };
}

async function resourceScenario(urls: string[]): Promise<Row> {
  const naiveUser = `demo-${randomUUID().slice(0, 8)}`;
  const serializedUser = `demo-${randomUUID().slice(0, 8)}`;
  const body = { name: 'monthly-report' };
  const [, serialized] = await Promise.all([
    fire(urls, `/naive/users/${naiveUser}/resources`, body),
    fire(urls, `/users/${serializedUser}/resources`, body),
  ]);
  const naiveList = await getJson<unknown[]>(`${urls[0]}/users/${naiveUser}/resources`);
  const serializedList = await getJson<unknown[]>(`${urls[0]}/users/${serializedUser}/resources`);
  return {
    scenario: 'create resource if absent',
    requests: `${DUPLICATES} × POST …/resources`,
    naive: `${naiveList.length} resources created`,
    serialized: `${serializedList.length} resource created (${count(serialized, 201)}×201, ${count(serialized, 200)}×200)`,
    ok: serializedList.length === 1 && count(serialized, 201) === 1 && count(serialized, 200) === DUPLICATES - 1,
  };
}

/** 20 copies of one payment with one Idempotency-Key: the naive twin charges each; @Idempotent charges once and answers all alike. */
async function paymentScenario(urls: string[]): Promise<Row> {
  const naiveAccount = `demo-${randomUUID().slice(0, 8)}`;
  const account = `demo-${randomUUID().slice(0, 8)}`;
  const key = randomUUID();
  const pay = (base: string, path: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ amount: 4200, currency: 'EUR' }),
    }).then(async (response) => ({
      shape: JSON.stringify([
        response.status,
        response.headers.get('content-type'),
        response.headers.get('location'),
        await response.text(),
      ]),
      replayed: response.headers.get('idempotent-replayed') === 'true',
    }));
  const [, responses] = await Promise.all([
    Promise.all(Array.from({ length: DUPLICATES }, (_, i) => pay(urls[i % urls.length], `/naive/accounts/${naiveAccount}/payments`))),
    Promise.all(Array.from({ length: DUPLICATES }, (_, i) => pay(urls[i % urls.length], `/accounts/${account}/payments`))),
  ]);
  const naiveCharges = (await getJson<unknown[]>(`${urls[0]}/accounts/${naiveAccount}/payments`)).length;
  const charges = (await getJson<unknown[]>(`${urls[0]}/accounts/${account}/payments`)).length;
  const identical = responses.filter((r) => r.shape === responses[0].shape).length;
  const replayed = responses.filter((r) => r.replayed).length;
  return {
    scenario: 'retried payment (Idempotency-Key)',
    requests: `${DUPLICATES} × POST …/payments, 1 key`,
    naive: `${naiveCharges} payments charged`,
    serialized: `${charges} payment charged, ${identical} identical responses, ${replayed} replayed`,
    ok: charges === 1 && identical === DUPLICATES && replayed === DUPLICATES - 1,
  };
}

async function reportsScenario(urls: string[]): Promise<Row> {
  const result = await runReportsDemo(urls[0], {
    userId: `demo-${randomUUID().slice(0, 8)}`,
    count: REPORTS,
    pollMs: 100,
    timeoutMs: 60_000,
  });
  const done = REPORTS - result.notCompleted.length;
  return {
    scenario: 'long task via BullMQ (202 + poll)',
    requests: `${REPORTS} × POST …/reports`,
    naive: 'n/a (plain BullMQ keeps no per-user order)',
    serialized: `${done}/${REPORTS} built one at a time, ${result.inOrder ? 'in enqueue order' : 'OUT OF ORDER'} (${result.overlaps} overlaps)`,
    ok: done === REPORTS && result.inOrder && result.overlaps === 0,
  };
}

/**
 * The digest job fires every second on every instance; `@OncePerTick` sends each
 * tick's digest once across them, while its naive twin is sent by every instance.
 */
async function digestScenario(urls: string[], upAt: number): Promise<Row> {
  // The window below starts a second after start-up and ends half a second before now: three more seconds make DIGEST_MIN_TICKS whole ticks whatever the fraction.
  const watchUntil = upAt + (DIGEST_MIN_TICKS + 3) * 1000;
  if (Date.now() < watchUntil) await new Promise((resolve) => setTimeout(resolve, watchUntil - Date.now()));
  // The first and the last second may have fired on some instances only.
  const result = await readDigestRuns(urls, upAt + 1000, Date.now() - 500);
  const instances = Object.values(result.perInstance);
  return {
    scenario: 'nightly digest, @OncePerTick (every second here)',
    requests: `${result.ticks} ticks × ${urls.length} instance${urls.length > 1 ? 's' : ''}`,
    naive: `${result.naiveSent} digests sent`,
    serialized: `${result.sent} digests, one per tick (${instances.length > 1 ? `the instances sent ${instances.join(' + ')}` : 'one instance'})`,
    ok: result.ticks >= DIGEST_MIN_TICKS && result.wrongTicks === 0,
  };
}

/**
 * The reports flow runs on BullMQ, which needs Redis even when the locks are in memory;
 * the transaction-mode reward needs PostgreSQL (`defaultPort` 5432) whatever the driver.
 */
function reachable(url: string, defaultPort = 6379): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) || defaultPort });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function printTable(rows: Row[]): void {
  const header: Row = { scenario: 'scenario', requests: 'requests', naive: 'naive outcome', serialized: 'serialized outcome', ok: true };
  const columns = ['scenario', 'requests', 'naive', 'serialized'] as const;
  const widths = columns.map((c) => Math.max(...[header, ...rows].map((r) => r[c].length)));
  const line = (r: Row, mark: string) => `| ${columns.map((c, i) => r[c].padEnd(widths[i])).join(' | ')} | ${mark} |`;
  console.log(line(header, 'ok'));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|----|`);
  for (const row of rows) console.log(line(row, row.ok ? '✔ ' : '✘ '));
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.driver) process.env.SERIALIZED_DRIVER = args.driver;
  const driver = process.env.SERIALIZED_DRIVER || 'memory';
  // The demo runs against the local services unless told otherwise (.env.example).
  process.env.REDIS_URL ||= 'redis://127.0.0.1:6379';
  process.env.DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/postgres';
  if (args.instances > 1 && driver === 'memory') {
    throw new Error(
      `--instances ${args.instances} needs a backend the instances share: add --driver redis (REDIS_URL) or --driver postgres (DATABASE_URL). ` +
        'The in-memory driver serializes inside one process only.',
    );
  }
  const backend = driver === 'redis' ? ` (${process.env.REDIS_URL})` : driver === 'postgres' ? ` (${process.env.DATABASE_URL})` : '';
  console.log(
    `nestjs-serialized demo — driver: ${driver}${backend}, instances: ${args.instances}, ${DUPLICATES} concurrent duplicates per endpoint\n`,
  );
  const redisUrl = loadAppConfig().redisUrl;
  const reports = await reachable(redisUrl);
  const databaseUrl = loadAppConfig().databaseUrl;
  const transactionalRewards = await reachable(databaseUrl, 5432);
  const deployment =
    args.instances === 1
      ? await startInProcess(reports, transactionalRewards)
      : await startProcesses(args.instances, reports, transactionalRewards);
  const upAt = Date.now();
  let rows: Row[];
  try {
    rows = [await rewardScenario(deployment.urls)];
    if (transactionalRewards) rows.push(await transactionalRewardScenario(deployment.urls));
    rows.push(await resourceScenario(deployment.urls), await paymentScenario(deployment.urls));
    if (reports) rows.push(await reportsScenario(deployment.urls));
    rows.push(await digestScenario(deployment.urls, upAt));
  } finally {
    await deployment.stop();
  }
  printTable(rows);
  if (!reports) console.log(`\n(The BullMQ reports flow was left out: it needs Redis, and none answers at ${redisUrl}.)`);
  if (!transactionalRewards)
    console.log(`\n(The transaction-mode reward was left out: it needs PostgreSQL, and none answers at ${databaseUrl}.)`);
  const failed = rows.filter((r) => !r.ok);
  if (failed.length) {
    console.error(`\nFAILED: the serialized outcome is wrong for: ${failed.map((r) => r.scenario).join(', ')}`);
    process.exit(1);
  }
  console.log(
    '\nEvery serialized outcome is right: each thing done once, one at a time, in arrival order; the retried payment charged once, every copy answered alike; each digest tick sent by one instance.',
  );
}

main().catch((error) => {
  console.error(`demo failed: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
});
