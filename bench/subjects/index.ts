import { memorySubjects } from './memory.subjects';
import { postgresSubjects } from './postgres.subjects';
import { redisSubjects } from './redis.subjects';
import type { Backend, SubjectSpec } from './subject';

export const SUBJECTS: Record<Backend, SubjectSpec[]> = {
  memory: memorySubjects,
  redis: redisSubjects,
  postgres: postgresSubjects,
};

export function findSubject(backend: Backend, id: string): SubjectSpec {
  const spec = SUBJECTS[backend].find((s) => s.id === id);
  if (!spec) throw new Error(`No ${backend} subject "${id}"`);
  return spec;
}

export const BACKEND_LABEL: Record<Backend, string> = { memory: 'in-memory', redis: 'Redis', postgres: 'PostgreSQL' };
