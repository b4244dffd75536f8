import type * as Bullmq from 'bullmq';
import { isMissingPackage, missingPeerError } from '../config/optional.peer';

/**
 * Loads `bullmq` when a job is first processed, never at module load: apps that
 * do not use BullMQ do not need it installed (it is an optional peer).
 */
export function loadBullmq(handler: string): typeof Bullmq {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('bullmq') as typeof Bullmq;
  } catch (error) {
    if (isMissingPackage(error, 'bullmq'))
      throw missingPeerError(`@Serialized on ${handler} (a BullMQ job)`, 'bullmq', 'bullmq @nestjs/bullmq');
    throw error;
  }
}
