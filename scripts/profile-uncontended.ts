/**
 * Where an uncontended acquisition spends its time: `LockService.run` on fresh keys,
 * one after another (the benchmark's scenario 1), under V8's CPU profiler, for the
 * Redis or PostgreSQL driver. Prints ops/s, CPU per op, and the functions with the
 * most self time, grouped as ours / ioredis or pg / Node and V8.
 *
 *   node -r ts-node/register/transpile-only -r tsconfig-paths/register scripts/profile-uncontended.ts redis 3000
 *
 * REDIS_URL / DATABASE_URL as everywhere (defaults: the local servers).
 */
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { LockService, PostgresLockProvider, RedisLockProvider, type LockProvider } from 'nestjs-serialized';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function providerFor(driver: string): LockProvider {
  const prefix = `prof-${process.pid}`;
  if (driver === 'redis') return new RedisLockProvider({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', keyPrefix: prefix });
  if (driver === 'postgres')
    return new PostgresLockProvider({
      connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
      keyPrefix: prefix,
    });
  throw new Error(`profile-uncontended: driver must be "redis" or "postgres", got ${JSON.stringify(driver)}`);
}

function where(url: string): string {
  if (url.includes('/libs/serialized/')) return 'ours';
  if (url.includes('/node_modules/ioredis/') || url.includes('/node_modules/redis-parser/')) return 'ioredis';
  if (url.includes('/node_modules/pg')) return 'pg';
  if (url.startsWith('node:') || url === '') return 'node/v8';
  return 'other';
}

async function main(): Promise<void> {
  const [driver = 'redis', ms = '3000'] = process.argv.slice(2);
  const provider = providerFor(driver);
  const service = new LockService(provider);
  let sequence = 0;
  const loop = async (until: number) => {
    let ops = 0;
    while (performance.now() < until) {
      await service.run(`k${sequence++}`, () => undefined);
      ops++;
    }
    return ops;
  };
  await loop(performance.now() + 500); // connect, load scripts, warm the JIT
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const ops = await loop(t0 + Number(ms));
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
  await provider.close();

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, t] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    const group = frame.functionName.startsWith('(') ? 'node/v8' : where(frame.url);
    groups.set(group, (groups.get(group) ?? 0) + t);
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(libs|node_modules)\//, '$1/')}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + t);
  }
  const perOp = (us: number) => `${(us / ops).toFixed(1)} µs/op`;
  console.log(
    `${driver}: ${ops} ops in ${elapsed.toFixed(0)} ms = ${Math.round(ops / (elapsed / 1000))} ops/s; CPU ${perOp(cpu.user + cpu.system)} (user ${perOp(cpu.user)}, system ${perOp(cpu.system)}); idle ${((idle / total) * 100).toFixed(0)} % of the profile`,
  );
  for (const [group, t] of [...groups].sort((a, b) => b[1] - a[1])) console.log(`  ${group.padEnd(8)} ${perOp(t)}`);
  console.log('  top self time:');
  for (const [name, t] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`    ${perOp(t).padStart(12)}  ${name}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
