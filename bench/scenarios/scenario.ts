import type { BenchConfig } from '../config';
import type { Log } from '../lib/interleave';
import type { ResultEntry } from '../report/results';
import { freePostgresConnections, type ServiceStatus } from '../services';
import type { Backend, SubjectContext, SubjectSpec } from '../subjects/subject';

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
  if (backend === 'mysql' && !services.mysql.reachable) return `MySQL not reachable: ${services.mysql.error ?? 'no answer'}`;
  return undefined;
}

/**
 * Why each contender cannot run in this run (absent when it can): its backend is
 * down, or on PostgreSQL it would need more server connections than the shared
 * server can spare (`callersPerProcess` waiting callers in each of `processes`).
 */
export async function unavailableContenders(
  services: ServiceStatus,
  backend: Backend,
  specs: SubjectSpec[],
  callersPerProcess: number,
  processes = 1,
): Promise<Map<string, string>> {
  const down = backendDown(services, backend);
  if (down) return new Map(specs.map((spec) => [spec.id, down]));
  const unavailable = new Map<string, string>();
  if (backend !== 'postgres') return unavailable;
  const { free, max, used } = await freePostgresConnections();
  for (const spec of specs) {
    const needed = processes * (spec.connectionsFor?.(callersPerProcess) ?? 0);
    if (needed > free) {
      unavailable.set(
        spec.id,
        `needs ${needed} simultaneous server connections (one per waiting caller); this server has max_connections=${max} with ${used} in use — not run, to avoid starving the shared server`,
      );
    }
  }
  return unavailable;
}
