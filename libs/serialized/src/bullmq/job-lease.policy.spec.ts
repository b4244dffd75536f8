import type { Job } from 'bullmq';
import { jobLeaseMs } from './job-lease.policy';

/** A job as a worker hands it to its processor: `job.queue` is the worker. */
const jobOf = (lockDuration?: unknown): Job => ({ queue: { opts: lockDuration === undefined ? {} : { lockDuration } } }) as unknown as Job;

describe('jobLeaseMs: the lease of the app lock a BullMQ job holds', () => {
  it("is the worker's lockDuration when the decorator sets no lease", () => {
    expect(jobLeaseMs(jobOf(4000), {}, undefined)).toBe(4000);
    expect(jobLeaseMs(jobOf(60_000), {}, undefined)).toBe(60_000);
  });

  it("is the decorator's leaseMs when that is shorter, never longer than lockDuration", () => {
    expect(jobLeaseMs(jobOf(4000), {}, 2000)).toBe(2000);
    expect(jobLeaseMs(jobOf(4000), {}, 30_000)).toBe(4000);
  });

  it("reads a WorkerHost's worker when the job does not name one, and tolerates a host without a worker yet", () => {
    expect(jobLeaseMs(jobOf(), { worker: { opts: { lockDuration: 5000 } } }, undefined)).toBe(5000);
    const unready = {
      get worker(): never {
        throw new Error('Worker has not yet been initialized');
      },
    };
    expect(jobLeaseMs(jobOf(), unready, 7000)).toBe(7000);
    expect(jobLeaseMs(jobOf(), unready, undefined)).toBeUndefined();
  });

  it("keeps the library's lowest lease and whole milliseconds; ignores a lockDuration that is no duration", () => {
    expect(jobLeaseMs(jobOf(20), {}, undefined)).toBe(100);
    expect(jobLeaseMs(jobOf(4000.4), {}, undefined)).toBe(4001);
    for (const bad of [0, -1, NaN, Infinity, '4000', null]) expect(jobLeaseMs(jobOf(bad), {}, 3000)).toBe(3000);
  });
});
