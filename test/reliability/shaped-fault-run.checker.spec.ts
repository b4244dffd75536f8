import { judgeShaped, shapeUnexercised, shapeViolations, type ShapedEntry, type ShapedOverlap } from './shaped-fault-run.checker';

/**
 * The shaped fault run's checker on hand-written detector logs: what it must let
 * through (3 in a group key, readers together, a told holder beside a newcomer) and
 * what it must count (a 4th untold group holder, a writer beside a reader, a token
 * twice, a reader granted before a writer entering after it). The run itself, against
 * the real servers, is `npm run reliability -- --shaped-fault-runs`.
 */
describe('the shaped fault run checker', () => {
  const GROUP = new Set(['k0']);
  const entry = (k: string, t: number, s: 'g' | 'r' | 'w', at = t): ShapedEntry => ({ k, t: String(t), m: `1:${t}`, at, s });
  const overlap = (key: string, member: number, others: number[]): ShapedOverlap => ({
    key,
    member: `1:${member}`,
    others: others.map((o) => `1:${o}`),
  });
  const judge = (entries: ShapedEntry[], overlaps: ShapedOverlap[], told: string[] = [], toldBeforeLeaving: string[] = told) =>
    judgeShaped(
      entries,
      overlaps,
      (id) => told.includes(id),
      (id) => toldBeforeLeaving.includes(id),
      GROUP,
      3,
    );

  it('lets 3 group holders and readers together through, and sees the cap reached and the readers together', () => {
    const verdict = judge(
      [entry('k0', 1, 'g'), entry('k0', 2, 'g'), entry('k0', 3, 'g'), entry('k1', 4, 'r'), entry('k1', 5, 'r'), entry('k1', 6, 'w')],
      [overlap('k0', 2, [1]), overlap('k0', 3, [1, 2]), overlap('k1', 5, [4])],
    );
    expect(verdict).toMatchObject({
      unexplainedOverlaps: 0,
      overlapsTold: 0,
      holdersNeverTold: 0,
      fencingViolations: 0,
      holdersLeftUntold: 0,
    });
    expect(verdict.shape).toMatchObject({
      mostUntoldGroupHolders: 3,
      readersTogether: 1,
      groupSections: 3,
      readerSections: 2,
      writerSections: 1,
    });
    expect([...shapeViolations(verdict.shape), ...shapeUnexercised(verdict.shape)]).toEqual([]);
  });

  it('counts a 4th group holder beside 3 untold ones, and excuses it beside a told one', () => {
    const four = [entry('k0', 1, 'g'), entry('k0', 2, 'g'), entry('k0', 3, 'g'), entry('k0', 4, 'g')];
    const untold = judge(four, [overlap('k0', 4, [1, 2, 3])]);
    expect(untold).toMatchObject({ unexplainedOverlaps: 1, holdersNeverTold: 3, holdersOvertaken: 1, holdersLeftUntold: 1 });
    expect(untold.shape).toMatchObject({ groupOverCap: 1, mostUntoldGroupHolders: 4 });
    const told = judge(four, [overlap('k0', 4, [1, 2, 3])], ['k0:1:1']);
    expect(told).toMatchObject({ unexplainedOverlaps: 0, overlapsTold: 1, holdersNeverTold: 0, holdersOvertaken: 1, holdersLeftUntold: 0 });
    // Told, but only after it left: the overlap is excused, the holder still left untold.
    expect(judge(four, [overlap('k0', 4, [1, 2, 3])], ['k0:1:1'], [])).toMatchObject({ unexplainedOverlaps: 0, holdersLeftUntold: 1 });
  });

  it('excuses a stalled holder entering late beside the holders that took its place if it knew before it left; counts it if not', () => {
    const four = [entry('k0', 1, 'g', 10), entry('k0', 2, 'g'), entry('k0', 3, 'g'), entry('k0', 4, 'g')];
    // The oldest token enters last: its process stalled between its grant and its section.
    const late = [overlap('k0', 1, [2, 3, 4])];
    expect(judge(four, late, ['k0:1:1'])).toMatchObject({ unexplainedOverlaps: 0, overlapsTold: 1, holdersNeverTold: 0 });
    expect(judge(four, late)).toMatchObject({ unexplainedOverlaps: 1, holdersNeverTold: 3 });
    // Told only after it left: it ran its section untold.
    expect(judge(four, late, ['k0:1:1'], [])).toMatchObject({ unexplainedOverlaps: 1 });
    // A told writer entering late beside a reader is excused the same way.
    const rw = [entry('k1', 1, 'w', 10), entry('k1', 2, 'r')];
    expect(judge(rw, [overlap('k1', 1, [2])], ['k1:1:1'])).toMatchObject({ unexplainedOverlaps: 0, overlapsTold: 1 });
  });

  it('counts a writer beside an untold reader and a reader beside an untold writer, not beside a told one', () => {
    const entries = [entry('k1', 1, 'r'), entry('k1', 2, 'w'), entry('k1', 3, 'r')];
    const verdict = judge(entries, [overlap('k1', 2, [1]), overlap('k1', 3, [2])]);
    expect(verdict).toMatchObject({ unexplainedOverlaps: 2, holdersNeverTold: 2, holdersOvertaken: 2, holdersLeftUntold: 2 });
    expect(verdict.shape).toMatchObject({ writerBesideOthers: 2, readersTogether: 0 });
    expect(shapeUnexercised(verdict.shape)).toEqual([
      'the group cap was never reached (at most 0 of 3 together)',
      'readers were never inside together',
    ]);
    const excused = judge(entries, [overlap('k1', 2, [1]), overlap('k1', 3, [2])], ['k1:1:1', 'k1:1:2']);
    expect(excused).toMatchObject({ unexplainedOverlaps: 0, overlapsTold: 2, holdersNeverTold: 0, holdersLeftUntold: 0 });
  });

  it('counts a token entered twice and an untold reader granted before a writer that entered after it', () => {
    const verdict = judge([entry('k0', 1, 'g'), entry('k0', 1, 'g'), entry('k1', 5, 'w'), entry('k1', 4, 'r')], []);
    expect(verdict.shape).toMatchObject({ duplicateTokens: 1, orderViolations: 1 });
    expect(verdict.fencingViolations).toBe(2);
    // Readers' entries among themselves may come in any order (they were inside together).
    expect(judge([entry('k1', 5, 'r'), entry('k1', 4, 'r'), entry('k1', 6, 'w')], []).fencingViolations).toBe(0);
  });
});
