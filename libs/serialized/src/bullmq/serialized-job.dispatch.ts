import type { SerializedJobCall } from './serialized-job.runner';

export { isBullmqJob } from './bullmq-job.shape';
export type { SerializedJobCall } from './serialized-job.runner';

/**
 * Runs a `@Serialized` method called with a BullMQ job (see `serialized-job.runner.ts`).
 * The runner is loaded with the first job, so apps without BullMQ never load it.
 */
export function runSerializedJob(call: SerializedJobCall): Promise<unknown> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runSerializedJob: run } = require('./serialized-job.runner') as typeof import('./serialized-job.runner');
  return run(call);
}
