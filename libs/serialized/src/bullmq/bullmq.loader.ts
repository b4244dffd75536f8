import type * as Bullmq from 'bullmq';

/**
 * Loads `bullmq` when a job is first processed, never at module load: apps that
 * do not use BullMQ do not need it installed (it is an optional peer).
 */
export function loadBullmq(handler: string): typeof Bullmq {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('bullmq') as typeof Bullmq;
  } catch (error) {
    throw new Error(
      `@Serialized on ${handler}: serializing BullMQ jobs needs the "bullmq" package. Install it next to "@nestjs/bullmq" (npm install bullmq @nestjs/bullmq).`,
      { cause: error },
    );
  }
}
