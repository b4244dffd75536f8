/**
 * One of the processes of scenario 3: opens a subject, then runs its share of the
 * waiters on the hot key between times the parent fixes on the shared clock, and
 * sends back its critical sections (shared-clock [start, end] pairs).
 */
import '../lib/quiet-logger';
import { countPostgresStatements } from '../lib/backend-counters';
import { sharedNow, sleepUntil } from '../lib/clock';
import { CriticalSections } from '../lib/handoffs';
import { describeError } from '../lib/interleave';
import { serveRequests, type Message } from '../lib/worker-process';
import { withTimeout } from '../services';
import { findSubject } from '../subjects';
import type { Backend, LockSubject, SubjectContext } from '../subjects/subject';

let subject: LockSubject | undefined;
/** Statements this process sent to PostgreSQL, counted from the subject's opening. */
let statements: { read(): number } | undefined;
let statementsAtOpen = 0;

serveRequests(async (message: Message): Promise<Message | undefined> => {
  switch (message.type) {
    case 'open': {
      const spec = findSubject(message.backend as Backend, message.subject as string);
      statements = spec.backend === 'postgres' ? countPostgresStatements() : undefined;
      statementsAtOpen = statements?.read() ?? 0;
      subject = await spec.open(message.context as SubjectContext);
      return { type: 'opened' };
    }
    case 'ping':
      // Clock calibration: the parent pairs this reading with its own send/receive times.
      return { type: 'pong', now: sharedNow() };
    case 'run':
      return run(message as unknown as RunRequest);
    case 'close':
      await subject?.close();
      subject = undefined;
      return { type: 'closed' };
    default:
      throw new Error(`unknown request ${message.type}`);
  }
});

interface RunRequest {
  key: string;
  waiters: number;
  startAt: number;
  to: number;
  drainTimeoutMs: number;
}

async function run(request: RunRequest): Promise<Message> {
  if (!subject) throw new Error('no subject open');
  const current = subject;
  const sections = new CriticalSections();
  const failures: string[] = [];
  const critical = (): void => {
    const start = sharedNow();
    sections.record(start, sharedNow());
  };
  const loop = async (): Promise<void> => {
    while (sharedNow() < request.to) {
      try {
        await current.withLock(request.key, critical);
      } catch (error) {
        failures.push(describeError(error));
        return;
      }
    }
  };
  await sleepUntil(request.startAt);
  try {
    await withTimeout(
      Promise.all(Array.from({ length: request.waiters }, loop)),
      request.to - sharedNow() + request.drainTimeoutMs,
      `waiters did not finish within ${request.drainTimeoutMs} ms after the window`,
    );
  } catch (error) {
    failures.push(describeError(error));
  }
  return {
    type: 'result',
    sections: sections.toFlat(),
    failures,
    statements: statements ? statements.read() - statementsAtOpen : undefined,
  };
}
