import { asyncLock, asyncMutexMap, asyncMutexSemaphore, memorySubjects, oursMemory } from './memory.subjects';
import { mysqlNested, mysqlSubjects, oursMysql } from './mysql.subjects';
import { oursPostgres, oursPostgresCohort, postgresNested, postgresSubjects } from './postgres.subjects';
import {
  oursRedis,
  oursRedisCohort,
  oursRedisReplicas,
  redisSemaphore,
  redisSemaphoreSemaphore,
  redisSubjects,
  redlock10,
  redlockDefault,
} from './redis.subjects';
import type { Backend, SubjectSpec } from './subject';

export const SUBJECTS: Record<Backend, SubjectSpec[]> = {
  memory: memorySubjects,
  redis: redisSubjects,
  postgres: postgresSubjects,
  mysql: mysqlSubjects,
};

/** Variants of this library that one scenario runs besides the usual contenders, under entry ids of their own. */
export const VARIANTS: Record<Backend, Record<string, SubjectSpec>> = {
  memory: {},
  redis: { cohort: oursRedisCohort, replicas: oursRedisReplicas },
  postgres: { cohort: oursPostgresCohort },
  mysql: {},
};

/**
 * Scenario 7 (two keys at once): this library's `run([a, b], fn)` beside what users
 * would do instead on each backend — a peer's own multi-key call (redlock, async-lock)
 * or nested single-key locks in sorted order (async-mutex, redis-semaphore, hand-rolled
 * advisory locks and named locks).
 */
export const KEY_SET_SUBJECTS: Record<Backend, SubjectSpec[]> = {
  memory: [oursMemory, asyncMutexMap, asyncLock],
  redis: [oursRedis, redlockDefault, redlock10, redisSemaphore],
  postgres: [oursPostgres, postgresNested],
  mysql: [oursMysql, mysqlNested],
};

/**
 * Scenario 8 (several holders of one key): N at a time per key beside a peer's own
 * semaphore (async-mutex's and redis-semaphore's `Semaphore`); shared readers beside a
 * plain mutex, whose readers hold the key alone (async-mutex's and redis-semaphore's
 * `Mutex`, hand-rolled advisory and named locks).
 */
export const PERMIT_SUBJECTS: Record<Backend, SubjectSpec[]> = {
  memory: [oursMemory, asyncMutexSemaphore],
  redis: [oursRedis, redisSemaphoreSemaphore],
  postgres: [oursPostgres],
  mysql: [],
};
export const SHARED_SUBJECTS: Record<Backend, SubjectSpec[]> = {
  memory: [oursMemory, asyncMutexMap],
  redis: [oursRedis, redisSemaphore],
  postgres: [oursPostgres, postgresNested],
  mysql: [],
};

export function findSubject(backend: Backend, id: string): SubjectSpec {
  const spec =
    SUBJECTS[backend].find((s) => s.id === id) ??
    Object.values(VARIANTS[backend]).find((s) => s.id === id) ??
    KEY_SET_SUBJECTS[backend].find((s) => s.id === id) ??
    PERMIT_SUBJECTS[backend].find((s) => s.id === id);
  if (!spec) throw new Error(`No ${backend} subject "${id}"`);
  return spec;
}

export const BACKEND_LABEL: Record<Backend, string> = {
  memory: 'in-memory',
  redis: 'Redis',
  postgres: 'PostgreSQL',
  mysql: 'MySQL / MariaDB',
};
