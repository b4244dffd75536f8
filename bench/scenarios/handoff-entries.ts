import type { Outcome } from '../lib/interleave';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import type { Backend, SubjectSpec } from '../subjects/subject';

/** The three entries of a hot-key scenario: hand-offs/s, p50 and p99 hand-off latency. */
export function handoffEntries(input: {
  scenario: number;
  backend: Backend;
  title: string;
  params: string;
  specs: readonly SubjectSpec[];
  outcomes: ReadonlyMap<string, Outcome>;
  /** A variant of this library (e.g. `cohort`): ids `<scenario>.<backend>.<variant>.*`. */
  variant?: string;
}): ResultEntry[] {
  const common = {
    scenario: input.scenario,
    group: GROUP_OF[input.backend],
    params: input.params,
    contenders: input.specs,
    outcomes: input.outcomes,
  };
  const id = `${input.scenario}.${input.backend}${input.variant ? `.${input.variant}` : ''}`;
  return [
    buildEntry({
      ...common,
      id: `${id}.handoffs`,
      name: `${input.title} — hand-offs/s`,
      metric: 'handoffsPerSec',
      unit: 'hand-offs/s',
      betterIs: 'higher',
    }),
    buildEntry({ ...common, id: `${id}.p50`, name: `${input.title} — hand-off latency p50`, metric: 'p50', unit: 'ms', betterIs: 'lower' }),
    buildEntry({ ...common, id: `${id}.p99`, name: `${input.title} — hand-off latency p99`, metric: 'p99', unit: 'ms', betterIs: 'lower' }),
  ];
}
