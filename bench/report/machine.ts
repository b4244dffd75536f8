import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../lib/repo-root';
import type { ServiceStatus } from '../services';
import type { MachineInfo } from './results';

const ROOT = REPO_ROOT;

/** Packages whose versions decide the numbers. */
const PACKAGES = [
  'async-mutex',
  'async-lock',
  'redlock',
  'redis-semaphore',
  'advisory-lock',
  'ioredis',
  'pg',
  'autocannon',
  '@nestjs/core',
  '@nestjs/platform-express',
  'typescript',
  'ts-node',
];

/** Installed version, read from the package's own package.json (some packages do not export it). */
export function installedVersion(name: string): string {
  try {
    const json = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
    return json.version.replace(/^v/, '');
  } catch {
    return 'not installed';
  }
}

export function machineInfo(services: ServiceStatus): MachineInfo {
  const cpus = os.cpus();
  const [l1, l5] = os.loadavg();
  const library = JSON.parse(readFileSync(path.join(ROOT, 'libs', 'serialized', 'package.json'), 'utf8')) as { version: string };
  return {
    cpuModel: cpus[0]?.model?.trim() || 'unknown',
    cores: cpus.length,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    node: process.version,
    redis: services.redis.version ?? `not reachable (${services.redis.error ?? 'no answer'})`,
    postgres: services.postgres.version ?? `not reachable (${services.postgres.error ?? 'no answer'})`,
    packages: { 'nestjs-serialized': library.version, ...Object.fromEntries(PACKAGES.map((p) => [p, installedVersion(p)])) },
    load: `load average at start ${l1.toFixed(2)} (1 min), ${l5.toFixed(2)} (5 min)`,
  };
}
