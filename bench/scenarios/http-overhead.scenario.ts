import { load } from '../lib/autocannon';
import { NET_DELAY_US, startDelayProxy, type DelayProxy } from '../lib/delay-proxy';
import { describeError, interleave, type Outcome, type Sample } from '../lib/interleave';
import { WorkerProcess } from '../lib/worker-process';
import { buildEntry, type ContenderInfo, type ResultEntry } from '../report/results';
import { backendDown, type Scenario, type ScenarioContext } from './scenario';

type Driver = 'memory' | 'redis';
/**
 * The apps: one per driver, an in-memory one that only ever serves the undecorated
 * route, and a Redis one whose Redis connection goes through a proxy adding 0.25 ms
 * each way (the network variant), and two Redis apps with `tracing: 'on'`, one with no
 * TracerProvider registered (spans are the API's no-ops) and one with the SDK.
 */
type App = Driver | 'fresh' | 'redis-net' | 'traced-noop' | 'traced-sdk';
type Variant = 'plain' | 'intercepted' | 'distinct' | 'hot';

const ROUTE: Record<Variant, (i: number) => string> = {
  plain: (i) => `/overhead/plain/${i}`,
  intercepted: (i) => `/bench-probe/intercepted/${i}`,
  distinct: (i) => `/overhead/serialized/${i}`,
  hot: () => '/overhead/serialized/hot',
};

const VARIANTS: Record<Variant, ContenderInfo> = {
  plain: { id: 'plain', label: 'undecorated handler', kind: 'baseline', settings: 'POST /overhead/plain/:id, distinct ids' },
  intercepted: {
    id: 'intercepted',
    label: 'undecorated + a no-op interceptor',
    kind: 'baseline',
    settings:
      "the same handler behind @UseInterceptors(NoopInterceptor) (returns next.handle()): the cost of Nest's interceptor pipeline alone",
  },
  distinct: {
    id: 'distinct',
    label: '@Serialized, distinct keys',
    kind: 'ours',
    settings: "POST /overhead/serialized/:id with @Serialized('id'), a new id per request",
  },
  hot: { id: 'hot', label: '@Serialized, one hot key', kind: 'ours', settings: 'POST /overhead/serialized/hot: every request on one key' },
};

const FRESH: ContenderInfo = {
  id: 'fresh',
  label: 'undecorated, app that never ran @Serialized',
  kind: 'baseline',
  settings:
    'POST /overhead/plain/:id on a separate app process that never serves a serialized route, so AsyncLocalStorage was never enabled',
};
const AFTER: ContenderInfo = { ...VARIANTS.plain, kind: 'ours', label: 'undecorated, after @Serialized ran' };

/** Server CPU per request (µs): what a request costs the app process, whatever the load generator and the host did meanwhile. */
async function serverMicros(worker: WorkerProcess): Promise<number> {
  return (await worker.request({ type: 'cpu' }, 'cpu', 15_000)).micros as number;
}

const DRIVER_LABEL: Record<Driver | 'redis-net', string> = {
  memory: 'in-memory',
  redis: 'Redis',
  'redis-net': `Redis over a ${NET_DELAY_US / 1000} ms-each-way path`,
};
/**
 * Server CPU per request of `@Serialized` against the no-op-interceptor route alone: the
 * only baseline, so the row's "÷ baseline" and "+ µs" are what the interceptor and the
 * lock add to Nest's own interceptor pipeline (same app process, same rounds).
 */
function serverCpuEntry(id: string, title: string, outcomes: ReadonlyMap<string, Outcome>, rounds: number): ResultEntry {
  return buildEntry({
    id,
    scenario: 6,
    group: 'http',
    name: `${title} — server CPU per request over the no-op-interceptor route`,
    metric: 'cpuMicrosPerRequest',
    unit: 'µs',
    betterIs: 'lower',
    params: `the app process's CPU time (process.cpuUsage, user + system) during each route's run ÷ its requests; the same app serves both routes, interleaved; median of ${rounds} rounds`,
    contenders: [VARIANTS.distinct, VARIANTS.intercepted],
    outcomes,
    notes: [
      'The baseline of this row is the same handler behind a no-op interceptor (not the undecorated route): what @Serialized adds over any interceptor.',
    ],
  });
}

/** The routes the network variant measures (each against its own no-op-interceptor route). */
const NET_ROUTES: Variant[] = ['plain', 'intercepted', 'distinct'];
/** The routes the traced apps measure: the decorated one against their own no-op-interceptor route. */
const TRACED_ROUTES: Variant[] = ['intercepted', 'distinct'];
const TRACED_LABEL: Record<'traced-noop' | 'traced-sdk', string> = {
  'traced-noop': "Redis driver, tracing: 'on' with no TracerProvider",
  'traced-sdk': "Redis driver, tracing: 'on' with the OpenTelemetry SDK (spans dropped by the exporter)",
};

/**
 * 6. What `@Serialized` costs per request: autocannon (programmatic API, in this
 * process) against the example app (Express, in a child process), on the same
 * trivial handler undecorated, behind a no-op interceptor, decorated with distinct
 * keys, and decorated with one hot key — in-memory and Redis drivers, each app
 * measured against its own no-op-interceptor route, all interleaved per round.
 * Besides requests/s (which on a shared 2-core host also measures what autocannon
 * and everyone else took), the server's CPU time per request is recorded.
 */
export const httpOverheadScenario: Scenario = {
  id: 6,
  title: 'HTTP overhead of @Serialized (autocannon)',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, connections, durationSec, warmupRequests } = config.http;
    const apps = new Map<App, { worker?: WorkerProcess; url?: string; error?: string }>();
    let proxy: DelayProxy | undefined;
    try {
      const proxyError = await startDelayProxy(context.subjects.redisUrl).then(
        (started) => void (proxy = started),
        (error: unknown) => describeError(error),
      );
      // The three apps start in parallel (Nest start-up is the slow part), then warm up one after another.
      await Promise.all(
        (['memory', 'redis', 'fresh', 'redis-net', 'traced-noop', 'traced-sdk'] as const).map(async (app) => {
          const driver: Driver = app === 'fresh' ? 'memory' : app === 'memory' ? 'memory' : 'redis';
          const tracing = app === 'traced-noop' ? 'noop' : app === 'traced-sdk' ? 'sdk' : undefined;
          const down =
            driver === 'redis' ? (backendDown(context.services, 'redis') ?? (app === 'redis-net' ? proxyError : undefined)) : undefined;
          if (down) return void apps.set(app, { error: down });
          const worker = WorkerProcess.start(`http app (${app})`, 'bench/workers/http-app.worker.ts');
          const redisUrl = app === 'redis-net' ? proxy!.via(context.subjects.redisUrl) : context.subjects.redisUrl;
          try {
            const started = await worker.request(
              { type: 'start', driver, redisUrl, tracing, keyPrefix: `${context.subjects.prefix}:http-${app}` },
              'started',
              60_000,
            );
            apps.set(app, { worker, url: `http://127.0.0.1:${started.port as number}` });
          } catch (error) {
            apps.set(app, { worker, error: `app did not start: ${describeError(error)}` });
          }
        }),
      );
      for (const [app, { url }] of apps) {
        if (!url) continue;
        const label =
          app === 'fresh' ? 'undecorated-only' : app === 'traced-noop' || app === 'traced-sdk' ? TRACED_LABEL[app] : DRIVER_LABEL[app];
        log(`  [6] ${label} app on ${url}; warming up`);
        const routes: Variant[] =
          app === 'fresh'
            ? ['plain']
            : app === 'redis-net'
              ? NET_ROUTES
              : app === 'traced-noop' || app === 'traced-sdk'
                ? TRACED_ROUTES
                : ['plain', 'intercepted', 'distinct', 'hot'];
        for (const variant of routes) await load(url, ROUTE[variant], connections, durationSec, warmupRequests);
      }

      const ids = [
        ...(['memory', 'redis'] as const).flatMap((d) => (Object.keys(ROUTE) as Variant[]).map((v) => `${d}:${v}`)),
        'fresh:plain',
        ...NET_ROUTES.map((v) => `redis-net:${v}`),
        ...(['traced-noop', 'traced-sdk'] as const).flatMap((app) => TRACED_ROUTES.map((v) => `${app}:${v}`)),
      ];
      const outcomes = await interleave(
        ids,
        rounds,
        async (id): Promise<Sample> => {
          const [name, variant] = id.split(':') as [App, Variant];
          const app = apps.get(name)!;
          if (!app.url) return { metrics: {}, failure: app.error };
          const before = await serverMicros(app.worker!);
          const result = await load(app.url, ROUTE[variant], connections, durationSec);
          const cpuMicrosPerRequest = (await serverMicros(app.worker!)) - before;
          const metrics = {
            requestsPerSec: result.requestsPerSec,
            p99: result.p99,
            cpuMicrosPerRequest: cpuMicrosPerRequest / Math.max(1, result.requests),
          };
          if (result.bad) return { metrics, failure: `${result.bad} requests failed (non-2xx, errors or timeouts)` };
          return { metrics };
        },
        log,
      );

      const entries: ResultEntry[] = [];
      for (const driver of ['memory', 'redis'] as const) {
        const byVariant = new Map<string, Outcome>();
        for (const variant of ['plain', 'distinct', 'hot'] as const)
          byVariant.set(variant, { ...outcomes.get(`${driver}:${variant}`)!, id: variant });
        // Each driver's app against its own no-op-interceptor route: same process, same round.
        byVariant.set('intercepted', { ...outcomes.get(`${driver}:intercepted`)!, id: 'intercepted' });
        byVariant.set('fresh', { ...outcomes.get('fresh:plain')!, id: 'fresh' });
        for (const variant of ['distinct', 'hot'] as const) {
          const common = {
            scenario: 6,
            group: 'http' as const,
            params: `autocannon, ${connections} connections, pipelining 1, ${durationSec} s per run after a ${warmupRequests}-request warm-up per route; Express; median of ${rounds} rounds`,
            contenders: [VARIANTS[variant], VARIANTS.plain, VARIANTS.intercepted, FRESH],
            outcomes: byVariant,
          };
          const title = `6. HTTP, ${DRIVER_LABEL[driver]} driver, @Serialized on ${variant === 'distinct' ? 'distinct keys' : 'one hot key'}`;
          entries.push(
            buildEntry({
              ...common,
              id: `6.${driver}.${variant}.rps`,
              name: `${title} — requests/s`,
              metric: 'requestsPerSec',
              unit: 'req/s',
              betterIs: 'higher',
            }),
            buildEntry({
              ...common,
              id: `6.${driver}.${variant}.p99`,
              name: `${title} — latency p99`,
              metric: 'p99',
              unit: 'ms',
              betterIs: 'lower',
            }),
            buildEntry({
              ...common,
              id: `6.${driver}.${variant}.cpu`,
              name: `${title} — server CPU per request`,
              metric: 'cpuMicrosPerRequest',
              unit: 'µs',
              betterIs: 'lower',
            }),
          );
        }
        entries.push(
          serverCpuEntry(
            `6.${driver}.distinct.server-cpu`,
            `6. HTTP, ${DRIVER_LABEL[driver]} driver, @Serialized on distinct keys`,
            byVariant,
            rounds,
          ),
        );
      }
      // The network variant: the Redis app over a slow path, against its own no-op-interceptor route.
      const net = new Map<string, Outcome>(NET_ROUTES.map((v) => [v, { ...outcomes.get(`redis-net:${v}`)!, id: v }]));
      const netCommon = {
        scenario: 6,
        group: 'http' as const,
        params: `the Redis app with its Redis connection through a proxy delaying each byte ${NET_DELAY_US / 1000} ms each way (bench/net/delay-proxy.c); autocannon ${connections} connections, pipelining 1, ${durationSec} s per run; Express; median of ${rounds} rounds`,
        contenders: [VARIANTS.distinct, VARIANTS.plain, VARIANTS.intercepted],
        outcomes: net,
      };
      const netTitle = `6. HTTP, ${DRIVER_LABEL['redis-net']}, @Serialized on distinct keys`;
      entries.push(
        buildEntry({
          ...netCommon,
          id: '6.redis.net.distinct.rps',
          name: `${netTitle} — requests/s`,
          metric: 'requestsPerSec',
          unit: 'req/s',
          betterIs: 'higher',
        }),
        buildEntry({
          ...netCommon,
          id: '6.redis.net.distinct.p99',
          name: `${netTitle} — latency p99`,
          metric: 'p99',
          unit: 'ms',
          betterIs: 'lower',
        }),
        buildEntry({
          ...netCommon,
          id: '6.redis.net.distinct.cpu',
          name: `${netTitle} — server CPU per request`,
          metric: 'cpuMicrosPerRequest',
          unit: 'µs',
          betterIs: 'lower',
        }),
      );
      entries.push(serverCpuEntry('6.redis.net.distinct.server-cpu', netTitle, net, rounds));
      // What traces cost a request: each traced app against its own no-op-interceptor route, beside 6.redis.distinct.server-cpu (untraced).
      for (const app of ['traced-noop', 'traced-sdk'] as const) {
        const traced = new Map<string, Outcome>(TRACED_ROUTES.map((v) => [v, { ...outcomes.get(`${app}:${v}`)!, id: v }]));
        const id = app === 'traced-noop' ? '6.redis.traced.noop.server-cpu' : '6.redis.traced.sdk.server-cpu';
        entries.push(serverCpuEntry(id, `6. HTTP, ${TRACED_LABEL[app]}, @Serialized on distinct keys`, traced, rounds));
      }
      // What enabling the library costs the routes it does not decorate (Node 20: AsyncLocalStorage promise hooks).
      const appWide = new Map<string, Outcome>([
        ['plain', { ...outcomes.get('memory:plain')!, id: 'plain' }],
        ['fresh', { ...outcomes.get('fresh:plain')!, id: 'fresh' }],
      ]);
      const appWideCommon = {
        scenario: 6,
        group: 'http' as const,
        params: `undecorated route of the in-memory app (after @Serialized requests were served) vs the same route on an app that never served one; autocannon ${connections} connections, ${durationSec} s; median of ${rounds} rounds`,
        contenders: [AFTER, FRESH],
        outcomes: appWide,
        notes: [
          'On Node 20 the first LockService.run enables an AsyncLocalStorage, whose promise hooks then run for every promise of the process; this row measures what that costs a route the decorator does not touch.',
        ],
      };
      entries.push(
        buildEntry({
          ...appWideCommon,
          id: '6.memory.app-wide.rps',
          name: '6. HTTP, undecorated route once @Serialized has run (app-wide cost) — requests/s',
          metric: 'requestsPerSec',
          unit: 'req/s',
          betterIs: 'higher',
        }),
        buildEntry({
          ...appWideCommon,
          id: '6.memory.app-wide.p99',
          name: '6. HTTP, undecorated route once @Serialized has run (app-wide cost) — latency p99',
          metric: 'p99',
          unit: 'ms',
          betterIs: 'lower',
        }),
      );
      return entries;
    } finally {
      for (const { worker } of apps.values()) {
        await worker?.request({ type: 'close' }, 'closed', 15_000).catch(() => undefined);
        await worker?.stop();
      }
      await proxy?.stop();
    }
  },
};
