import type { LockSubject, SubjectContext, SubjectSpec } from '../subjects/subject';
import { describeError, type Sample } from './interleave';

/**
 * Opens the subject for one measurement and closes it afterwards, so no contender
 * runs while another one's connections, timers or hooks are still alive. A subject
 * that cannot open is reported as failed with the reason, never dropped.
 */
export async function measureOpened(
  spec: SubjectSpec,
  context: SubjectContext,
  measure: (subject: LockSubject) => Promise<Sample>,
): Promise<Sample> {
  let subject: LockSubject;
  try {
    subject = await spec.open(context);
  } catch (error) {
    return { metrics: {}, failure: `could not start: ${describeError(error)}` };
  }
  try {
    return await measure(subject);
  } finally {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([subject.close().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
  }
}
