import { memorySubjects } from './memory.subjects';
import { mysqlSubjects } from './mysql.subjects';
import { oursPostgresCohort, postgresSubjects } from './postgres.subjects';
import { oursRedisCohort, oursRedisReplicas, redisSubjects } from './redis.subjects';
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

export function findSubject(backend: Backend, id: string): SubjectSpec {
  const spec = SUBJECTS[backend].find((s) => s.id === id) ?? Object.values(VARIANTS[backend]).find((s) => s.id === id);
  if (!spec) throw new Error(`No ${backend} subject "${id}"`);
  return spec;
}

export const BACKEND_LABEL: Record<Backend, string> = {
  memory: 'in-memory',
  redis: 'Redis',
  postgres: 'PostgreSQL',
  mysql: 'MySQL / MariaDB',
};
