import type { BenchConfig } from '../config';
import type { Log } from '../lib/interleave';
import type { ResultEntry } from '../report/results';
import type { ServiceStatus } from '../services';
import type { Backend, SubjectContext } from '../subjects/subject';

export interface ScenarioContext {
  config: BenchConfig;
  services: ServiceStatus;
  /** Service URLs and this run's key prefix. */
  subjects: SubjectContext;
  log: Log;
}

export interface Scenario {
  id: number;
  title: string;
  run(context: ScenarioContext): Promise<ResultEntry[]>;
}

/** Why a backend cannot be measured at all in this run (undefined when it can). */
export function backendDown(services: ServiceStatus, backend: Backend): string | undefined {
  if (backend === 'redis' && !services.redis.reachable) return `Redis not reachable: ${services.redis.error ?? 'no answer'}`;
  if (backend === 'postgres' && !services.postgres.reachable) return `PostgreSQL not reachable: ${services.postgres.error ?? 'no answer'}`;
  return undefined;
}
