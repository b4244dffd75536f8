/**
 * What the traces cost a call: CPU time per uncontended `LockService.run` with
 * tracing off, `'on'` with no TracerProvider registered (no-op spans), and `'on'`
 * with the OpenTelemetry SDK (`BasicTracerProvider`, `SimpleSpanProcessor`, an
 * exporter that drops what it is given: the SDK's cost, not an exporter's),
 * interleaved round by round so that the host's load falls on each alike.
 *
 *   node --expose-gc -r ts-node/register/transpile-only -r tsconfig-paths/register bench/profile/tracing.profile.ts [memory|redis://…] [rounds] [calls]
 *   node --expose-gc -r ./.cache/test-build/register-paths.js .cache/test-build/bench/profile/tracing.profile.js …   (compiled: after a jest run)
 *
 * With `--expose-gc` it collects garbage between rounds, so that no round pays for
 * the one before it.
 *
 * In-memory (default) a call takes its free key synchronously: one hold span and no
 * wait span. With a Redis URL every call asks Redis, so it has both. It prints the
 * median of the rounds' CPU per call (process.cpuUsage, user + system) for each
 * setting and the difference from tracing off. Tracing off is what `'auto'` does
 * with no TracerProvider registered, and what a process without
 * `@opentelemetry/api` does (docs/observability.md, "Traces"). A measuring tool
 * for the figures in that section, not a benchmark row: nothing is asserted.
 */
import { BasicTracerProvider, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { InMemoryLockProvider, LockService, RedisLockProvider, type LockProvider } from 'nestjs-serialized';
import { SerializedTracing } from 'nestjs-serialized/observability/serialized.tracing';

type Setting = 'off' | 'on, no TracerProvider' | 'on, SDK';

const target = process.argv[2] ?? 'memory';
const rounds = Number(process.argv[3] ?? 9);
const calls = Number(process.argv[4] ?? (target === 'memory' ? 200_000 : 5_000));

/** Takes every span and keeps none. */
const dropping: SpanExporter = {
  export: (_spans: ReadableSpan[], done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};
const sdk = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropping)] });
const collect = (globalThis as { gc?: () => void }).gc ?? noop;

function providerFor(): LockProvider {
  return target === 'memory'
    ? new InMemoryLockProvider()
    : new RedisLockProvider({ url: target, keyPrefix: `tracing-profile-${process.pid}` });
}

function serviceFor(setting: Setting, provider: LockProvider): LockService {
  const service = new LockService(provider);
  if (setting === 'on, no TracerProvider') service.traceWith(SerializedTracing.create(provider, 'on'));
  if (setting === 'on, SDK') service.traceWith(SerializedTracing.create(provider, 'on', sdk));
  return service;
}

/** CPU µs of `calls` sequential calls on distinct keys (nothing waits). */
async function round(service: LockService): Promise<number> {
  collect();
  const started = process.cpuUsage();
  for (let i = 0; i < calls; i++) await service.run(`bench:${i}`, noop);
  const used = process.cpuUsage(started);
  return used.user + used.system;
}

function noop(): void {}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  const settings: Setting[] = ['off', 'on, no TracerProvider', 'on, SDK'];
  const providers = new Map(settings.map((setting) => [setting, providerFor()]));
  const services = new Map(settings.map((setting) => [setting, serviceFor(setting, providers.get(setting)!)]));
  // One warm-up round each: the JIT has seen every path before anything counts.
  for (const setting of settings) await round(services.get(setting)!);
  const perCall = new Map<Setting, number[]>(settings.map((setting) => [setting, []]));
  for (let r = 0; r < rounds; r++) {
    // Each round in another order: none always runs first or last.
    const order = settings.map((_, i) => settings[(i + r) % settings.length]);
    for (const setting of order) perCall.get(setting)!.push(((await round(services.get(setting)!)) * 1000) / calls);
  }
  const off = median(perCall.get('off')!);
  console.log(`${target}: CPU per call, median of ${rounds} rounds of ${calls} calls`);
  for (const setting of settings) {
    const ns = median(perCall.get(setting)!);
    const delta = setting === 'off' ? '' : ` (${ns - off >= 0 ? '+' : ''}${Math.round(ns - off)} ns)`;
    console.log(`  tracing ${setting.padEnd(24)} ${Math.round(ns)} ns${delta}`);
  }
  await Promise.all([...providers.values()].map((provider) => provider.close()));
  await sdk.shutdown();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
