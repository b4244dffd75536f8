import { grantProblems, maxPlaces, type JobEvent } from './job-log';

const ev = (e: JobEvent['e'], seq: number, pid = 1, attempt = 0): JobEvent => ({ e, key: 'k', seq, id: String(seq), attempt, pid });

describe('the BullMQ job log checker', () => {
  it('counts a place from a job’s first start through its retries to its last event', () => {
    // Job 1 fails once and is retried: its place lasts through the retry, so 2 and 3 beside it are 3 places.
    const log = [
      ev('start', 1),
      ev('fail', 1),
      ev('start', 2),
      ev('start', 3),
      ev('start', 1, 1, 1),
      ev('end', 1),
      ev('end', 2),
      ev('end', 3),
    ];
    expect(maxPlaces(log)).toBe(3);
    expect(grantProblems(log, 2)).not.toEqual([]);
  });

  it('counts a job killed mid-body as holding its place until its re-run ends', () => {
    const log = [
      ev('start', 1, 1),
      ev('start', 2, 2),
      ev('start', 3, 2),
      ev('end', 2, 2),
      ev('start', 1, 2),
      ev('end', 1, 2),
      ev('end', 3, 2),
    ];
    expect(maxPlaces(log)).toBe(3);
  });

  it('counts a job that ended and ran again (its worker killed before BullMQ recorded the completion) as two runs', () => {
    // Job 2 ended in worker 1 and left its key; worker 1 died before BullMQ completed it, so stalled-job
    // recovery ran it again later, behind 4: it took a new place then, not the old one all along.
    const log = [
      ev('start', 1, 1),
      ev('start', 2, 1),
      ev('end', 2, 1),
      ev('start', 3, 2),
      ev('end', 3, 2),
      ev('start', 4, 2),
      ev('end', 4, 2),
      ev('start', 1, 2, 1),
      ev('end', 1, 2, 1),
      ev('start', 2, 2, 1),
      ev('end', 2, 2, 1),
    ];
    expect(maxPlaces(log)).toBe(2);
    expect(grantProblems(log, 2)).toEqual([]);
  });
});
