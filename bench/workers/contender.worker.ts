/**
 * One contender of scenarios 1, 2, 4, 7 and 8 in a process of its own (see
 * lib/contender-hosts.ts): each `measure` request opens the subject, runs one
 * round of the scenario, closes it, and answers with the sample, the number of
 * critical sections entered and, on PostgreSQL, the statements sent.
 */
import '../lib/quiet-logger';
import { countPostgresStatements } from '../lib/backend-counters';
import type { MeasuredReply } from '../lib/contender-hosts';
import type { Sample } from '../lib/interleave';
import { measureOpened } from '../lib/open-subjects';
import { serveRequests, type Message } from '../lib/worker-process';
import { holdersRound } from '../scenarios/holders.scenario';
import { hotKeyRound } from '../scenarios/hot-key.scenario';
import { manyKeysRound } from '../scenarios/many-keys.scenario';
import { transferRound } from '../scenarios/transfer.scenario';
import { uncontendedRound } from '../scenarios/uncontended.scenario';
import { findSubject } from '../subjects';
import type { Backend, LockSubject, SubjectContext } from '../subjects/subject';

type Round = (subject: LockSubject, round: number, id: string, params: Record<string, unknown>) => Promise<Sample>;

const ROUNDS: Record<number, Round> = {
  1: uncontendedRound as Round,
  2: hotKeyRound as Round,
  4: manyKeysRound as Round,
  7: transferRound as Round,
  8: holdersRound as Round,
};

interface MeasureRequest {
  scenario: number;
  backend: Backend;
  subject: string;
  round: number;
  params: Record<string, unknown>;
  context: SubjectContext;
}

serveRequests(async (message: Message): Promise<Message> => {
  if (message.type !== 'measure') throw new Error(`unknown request ${message.type}`);
  const request = message as unknown as MeasureRequest;
  const round = ROUNDS[request.scenario];
  if (!round) throw new Error(`scenario ${request.scenario} does not run in a contender worker`);
  const statements = request.backend === 'postgres' ? countPostgresStatements() : undefined;
  const statementsBefore = statements?.read() ?? 0;
  let acquisitions = 0;
  const sample = await measureOpened(findSubject(request.backend, request.subject), request.context, (subject) => {
    // Counted inside the critical section: no extra promise on the measured path.
    const counted: LockSubject = {
      withLock: (key, fn) =>
        subject.withLock(key, () => {
          acquisitions++;
          return fn();
        }),
      // A key set counts once: scenario 7's backend work is per transfer.
      withLocks: subject.withLocks
        ? (keys, fn) =>
            subject.withLocks!(keys, () => {
              acquisitions++;
              return fn();
            })
        : undefined,
      withPermit: subject.withPermit
        ? (key, permits, fn) =>
            subject.withPermit!(key, permits, () => {
              acquisitions++;
              return fn();
            })
        : undefined,
      withShared: subject.withShared
        ? (key, fn) =>
            subject.withShared!(key, () => {
              acquisitions++;
              return fn();
            })
        : undefined,
      close: () => subject.close(),
    };
    return round(counted, request.round, request.subject, request.params);
  });
  const reply: MeasuredReply = { sample, acquisitions, statements: statements ? statements.read() - statementsBefore : undefined };
  return { type: 'measured', ...reply };
});
