/**
 * Where a two-key transfer spends its Redis commands and its time: this library's
 * `lockService.run([a, b], fn)` against redlock's two-resource `using([a, b])` (and
 * nested redis-semaphore mutexes), on a Redis server of nobody else (the counts are
 * `INFO commandstats` deltas, so another client's commands would land in them).
 *
 *   node -r ts-node/register/transpile-only -r tsconfig-paths/register bench/profile/key-set.profile.ts redis://127.0.0.1:16999 [ms]
 *   node -r ts-node/register/transpile-only -r tsconfig-paths/register bench/profile/key-set.profile.ts memory [ms]
 *
 * For each contender and each workload — `sequential` (one caller, a fresh pair each
 * time: nothing waits) and `contended` (scenario 7: 8 callers, random pairs of 6
 * accounts) — it prints transfers/s, client CPU per transfer, socket writes per transfer
 * (`net.Socket#write` / `_writev` calls: round trips the client starts), the commands
 * per transfer by name with the server's µs for them, the command sequence of one
 * sequential transfer (MONITOR), and for ours the functions with the most self time
 * (V8's CPU profiler), grouped as ours / ioredis / node and V8. `memory` instead of a URL
 * runs the contended workload in process: ours against async-lock and nested async-mutex. A diagnosis tool, not a
 * benchmark: nothing is asserted, and the benchmark's rows come from `npm run bench`.
 */
import { Session } from 'node:inspector/promises';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { asyncLock, asyncMutexMap, lockServiceSubject, oursMemory } from '../subjects/memory.subjects';
import { redisSemaphore, redlock10 } from '../subjects/redis.subjects';
import type { LockSubject, SubjectContext } from '../subjects/subject';

type Workload = 'sequential' | 'contended';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const url = process.argv[2] ?? 'redis://127.0.0.1:16999';
const windowMs = Number(process.argv[3] ?? 2000);

/** Calls and server µs per command name, from INFO commandstats. */
async function commandStats(client: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const info = await client.info('commandstats');
  const stats = new Map<string, { calls: number; usec: number }>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) stats.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  return stats;
}

/** Socket writes of this process (every ioredis command leaves through one of these). */
function countSocketWrites(): { read(): number } {
  const proto = net.Socket.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const counter = { n: 0 };
  // Both write() and writev() end here: one call is one system call's worth of commands.
  const original = proto._writeGeneric;
  proto._writeGeneric = function (this: unknown, ...args: unknown[]) {
    counter.n++;
    return original.apply(this, args);
  };
  return { read: () => counter.n };
}

async function transfers(subject: LockSubject, workload: Workload, ms: number, tag: string): Promise<number> {
  const withLocks = subject.withLocks!.bind(subject);
  const until = performance.now() + ms;
  let done = 0;
  if (workload === 'sequential') {
    let i = 0;
    while (performance.now() < until) {
      // A fresh pair each time: nobody ever waits, what is left is the path itself.
      await withLocks([`${tag}:s${i}a`, `${tag}:s${i}b`], () => undefined);
      i++;
      done++;
    }
    return done;
  }
  const accounts = Array.from({ length: 6 }, (_, i) => `${tag}:acct${i}`);
  const caller = async (): Promise<void> => {
    while (performance.now() < until) {
      const a = Math.floor(Math.random() * 6);
      let b = Math.floor(Math.random() * 5);
      if (b >= a) b++;
      await withLocks([accounts[a], accounts[b]], () => new Promise<void>((resolve) => setImmediate(resolve)));
      done++;
    }
  };
  await Promise.all(Array.from({ length: 8 }, caller));
  return done;
}

function where(url: string): string {
  if (url.includes('/libs/serialized/')) return 'ours';
  if (url.includes('/node_modules/ioredis/') || url.includes('/node_modules/redis-parser/')) return 'ioredis';
  if (url.includes('/node_modules/')) return 'other packages';
  return 'node/v8/gc';
}

function summarise(profile: Profile, ops: number): string[] {
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++)
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + profile.timeDeltas[i]);
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const frame = byNode.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    total += us;
    groups.set(where(frame.url), (groups.get(where(frame.url)) ?? 0) + us);
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(libs|node_modules)\//, '$1/')}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  const lines = [
    `    profiled busy time ${(total / ops).toFixed(1)} µs per transfer: ${[...groups]
      .sort((a, b) => b[1] - a[1])
      .map(([g, us]) => `${g} ${((100 * us) / total).toFixed(1)} %`)
      .join(', ')}`,
  ];
  for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 12))
    lines.push(`      ${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / ops).toFixed(2).padStart(6)} µs  ${name}`);
  return lines;
}

async function monitorOne(subject: LockSubject, tag: string): Promise<string[]> {
  const monitor = await new Redis(url).monitor();
  const seen: string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    const [name, ...rest] = args;
    // Scripts show as EVALSHA <sha> <numkeys> keys…; the keys say which lock.
    seen.push(
      `${name} ${rest.slice(name.toLowerCase() === 'evalsha' ? 1 : 0, name.toLowerCase() === 'evalsha' ? 6 : 3).join(' ')}`.slice(0, 160),
    );
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await subject.withLocks!([`${tag}:mA`, `${tag}:mB`], () => undefined);
  await new Promise((resolve) => setTimeout(resolve, 100));
  monitor.disconnect();
  return seen;
}

/** Starts V8's sampling profiler in this process (its own cost is why PROFILE=0 exists). */
async function startProfiler(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  return session;
}

/** The in-memory providers: no backend to count, so CPU per transfer and ours' profile. */
async function mainMemory(): Promise<void> {
  const context: SubjectContext = { redisUrl: '', databaseUrl: '', mysqlUrl: '', prefix: 'nsprof' };
  for (const spec of [oursMemory, asyncMutexMap, asyncLock]) {
    const subject = await spec.open(context);
    await transfers(subject, 'contended', 300, 'warm');
    const profiling = spec === oursMemory && process.env.PROFILE !== '0' ? await startProfiler() : undefined;
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const ops = await transfers(subject, 'contended', windowMs, 'run');
    const elapsed = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const profile = profiling ? ((await profiling.post('Profiler.stop')).profile as unknown as Profile) : undefined;
    profiling?.disconnect();
    console.log(
      `contended  ${spec.id.padEnd(26)} ${Math.round(ops / (elapsed / 1000))} transfers/s, client CPU ${((cpu.user + cpu.system) / ops).toFixed(1)} µs per transfer`,
    );
    if (profile) for (const line of summarise(profile, ops)) console.log(line);
    await subject.close();
  }
}

async function main(): Promise<void> {
  if (url === 'memory') return mainMemory();
  const context: SubjectContext = { redisUrl: url, databaseUrl: '', mysqlUrl: '', prefix: `nsprof:${process.pid}` };
  const counter = new Redis(url);
  const writes = countSocketWrites();
  const ours = async (): Promise<LockSubject> => lockServiceSubject(new RedisLockProvider({ url, keyPrefix: `${context.prefix}:ours` }));
  const contenders: Array<[string, () => Promise<LockSubject>]> = [
    ['ours', ours],
    ['redlock-10ms', () => redlock10.open(context)],
    ['redis-semaphore (nested)', () => redisSemaphore.open(context)],
  ];
  // Ours with one key, the same loop: what a two-key set costs beyond twice this.
  {
    const subject = await ours();
    const oneKey = async (ms: number, tag: string): Promise<number> => {
      const until = performance.now() + ms;
      let i = 0;
      while (performance.now() < until) await subject.withLock(`${tag}:${i++}`, () => undefined);
      return i;
    };
    await oneKey(300, 'one:warm');
    const before = await commandStats(counter);
    const writesBefore = writes.read();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const ops = await oneKey(windowMs, 'one');
    const elapsed = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const after = await commandStats(counter);
    let total = -1; // the second INFO
    for (const [command, now] of after) total += now.calls - (before.get(command)?.calls ?? 0);
    console.log(
      `one key    ours                       ${Math.round(ops / (elapsed / 1000))} sections/s, client CPU ${((cpu.user + cpu.system) / ops).toFixed(1)} µs, socket writes ${((writes.read() - writesBefore) / ops).toFixed(2)}, commands ${(total / ops).toFixed(2)} per section`,
    );
    await subject.close();
  }
  for (const workload of ['sequential', 'contended'] as const) {
    for (const [name, open] of contenders) {
      const subject = await open();
      const tag = `${workload}:${name}`;
      await transfers(subject, workload, 300, `${tag}:warm`);
      const before = await commandStats(counter);
      const writesBefore = writes.read();
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      // The profiler costs CPU of its own: PROFILE=0 gives the clean figures, one run with it says where the time goes.
      const profiling = name === 'ours' && process.env.PROFILE !== '0' ? await startProfiler() : undefined;
      const ops = await transfers(subject, workload, windowMs, tag);
      const elapsed = performance.now() - started;
      const profile = profiling ? ((await profiling.post('Profiler.stop')).profile as unknown as Profile) : undefined;
      profiling?.disconnect();
      const cpu = process.cpuUsage(cpuBefore);
      const socketWrites = writes.read() - writesBefore;
      const after = await commandStats(counter);
      const perCommand: string[] = [];
      let total = 0;
      let serverUs = 0;
      for (const [command, now] of after) {
        const was = before.get(command) ?? { calls: 0, usec: 0 };
        const calls = now.calls - was.calls - (command === 'info' ? 1 : 0);
        if (calls <= 0) continue;
        total += calls;
        serverUs += now.usec - was.usec;
        perCommand.push(`${command} ${(calls / ops).toFixed(2)}`);
      }
      console.log(
        `${workload.padEnd(10)} ${name.padEnd(26)} ${Math.round(ops / (elapsed / 1000))} transfers/s, client CPU ${((cpu.user + cpu.system) / ops).toFixed(1)} µs, socket writes ${(socketWrites / ops).toFixed(2)}, commands ${(total / ops).toFixed(2)} (${perCommand.join(', ')}), Redis server ${(serverUs / ops).toFixed(1)} µs per transfer`,
      );
      if (profile) for (const line of summarise(profile, ops)) console.log(line);
      if (workload === 'sequential') for (const line of await monitorOne(subject, `${tag}:mon`)) console.log(`      MONITOR ${line}`);
      await subject.close();
    }
  }
  counter.disconnect();
}

main().then(
  () => setTimeout(() => process.exit(0), 200),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
