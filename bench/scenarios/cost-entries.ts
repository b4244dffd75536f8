import type { Outcome } from '../lib/interleave';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import type { Backend, SubjectSpec } from '../subjects/subject';

/**
 * The backend work per acquisition of a scenario: Redis commands (`N.redis.commands`,
 * from `INFO commandstats`, scripts' inner commands included) or PostgreSQL
 * statements (`N.postgres.statements`). None for the in-memory backend.
 */
export function costEntries(input: {
  scenario: number;
  backend: Backend;
  title: string;
  params: string;
  specs: readonly SubjectSpec[];
  outcomes: ReadonlyMap<string, Outcome>;
  /** A variant of this library (e.g. `cohort`): ids `<scenario>.<backend>.<variant>.*`. */
  variant?: string;
  /** What one counted operation is (default: an acquisition; scenario 7: a transfer, two keys). */
  per?: string;
}): ResultEntry[] {
  const per = input.per ?? 'acquisition';
  // Nothing counts the MySQL contenders' statements (yet): no entry rather than a wrong one.
  if (input.backend === 'memory' || input.backend === 'mysql') return [];
  const redis = input.backend === 'redis';
  return [
    buildEntry({
      id: `${input.scenario}.${input.backend}${input.variant ? `.${input.variant}` : ''}.${redis ? 'commands' : 'statements'}`,
      scenario: input.scenario,
      group: GROUP_OF[input.backend],
      name: `${input.title} — ${redis ? 'Redis commands' : 'statements'} per ${per}`,
      metric: redis ? 'commandsPerOp' : 'statementsPerOp',
      unit: redis ? 'commands/op' : 'statements/op',
      betterIs: 'lower',
      params: input.params,
      contenders: input.specs,
      outcomes: input.outcomes,
      notes: [
        redis
          ? `Commands per ${per}: the INFO commandstats delta around the measurement (commands that scripts run count too; connecting and the warm-up included) ÷ critical sections entered. Exact only when nobody else uses the Redis server during the run.`
          : `Statements per ${per}: queries the contender's process sent through pg (its own count: each contender runs in a process of its own; connecting and the warm-up included) ÷ critical sections entered.`,
      ],
    }),
  ];
}
