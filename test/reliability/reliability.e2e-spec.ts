import { SHORT } from './reliability.scenarios';
import { runSuite, type SuiteResult } from './reliability.suite';

/**
 * The short form of `npm run reliability` (docs/reliability.md): a few of its
 * scenarios at small sizes, each with a CPU hog beside it, real processes and
 * servers. It asserts what the report's table shows and never writes the report.
 */
describe('reliability suite (short form)', () => {
  let result: SuiteResult;

  beforeAll(async () => {
    result = await runSuite(SHORT, 'short', undefined, [
      'seeds redis',
      'SIGSTOP redis',
      'dropped postgres',
      'one key redis',
      'many keys postgres',
    ]);
  }, 240_000);

  it('runs every chosen scenario', () => {
    expect(result.rows.map((r) => `${r.scenario} / ${r.provider}`)).toHaveLength(5);
    for (const row of result.rows) expect(row.sections).toBeGreaterThan(0);
  });

  it('has no overlap, fencing violation, lost update, duplicate execution or leak in any row', () => {
    for (const row of result.rows) {
      expect({
        row: `${row.scenario} / ${row.provider}`,
        overlaps: row.overlaps,
        fencing: row.fencingViolations,
        lost: row.lostUpdates,
        duplicates: row.duplicates,
        leaked: row.leaked,
        order: row.orderViolations ?? 0,
      }).toEqual({
        row: `${row.scenario} / ${row.provider}`,
        overlaps: 0,
        fencing: 0,
        lost: 0,
        duplicates: 0,
        leaked: 0,
        order: 0,
      });
    }
  });

  it('answers no 503 where the backend had no fault', () => {
    for (const row of result.rows.filter((r) => r.faults === '—'))
      expect({ row: row.scenario, r503: row.r503 }).toEqual({ row: row.scenario, r503: 0 });
  });

  it("refuses the paused holder's late write with the fence, and recovers after each fault", () => {
    const paused = result.rows.find((r) => r.scenario.startsWith('SIGSTOP'))!;
    expect(paused.notes).toContain('late write was rejected by the fence');
    for (const row of result.rows.filter((r) => r.faults !== '—')) expect(row.recoveryMs).toBeDefined();
  });

  it('shows the race on the naive controls under the same load', () => {
    expect(result.controls.length).toBeGreaterThan(0);
    expect(result.controls.some((c) => c.wrong > 0)).toBe(true);
  });
});
