import { faultRun, faultRunProblems, FAULT_RUN_SHORT, type FaultRunResult } from './fault-run.scenario';
import { startCpuHog } from './support/environment';

/**
 * Runs alone, after the other suites (`*.alone-spec.ts`): it brings its own load
 * (four processes, a CPU hog, faults) and would be the other suites' bad day too.
 *
 * The short form of the randomized fault run (test/reliability/fault-run.scenario.ts; the full form, 120 s
 * of faults per driver, is in `npm run reliability`): four processes, beside a CPU
 * hog, one fault at a time, then a fault-free tail. Every count that means a wrong
 * result must be 0 — and the naive control under the same kind of faults must go
 * wrong, or the run did not exercise what it claims to.
 */
describe('randomized fault run (short form)', () => {
  const runWithHog = async (run: () => Promise<FaultRunResult>): Promise<FaultRunResult> => {
    const hog = startCpuHog();
    try {
      return await run();
    } finally {
      hog.kill('SIGKILL');
    }
  };

  for (const driver of ['postgres', 'redis', 'mysql'] as const) {
    it(`${driver}: no lost update, no untold overlap or fencing violation, no stuck key, no 503 in the fault-free tail`, async () => {
      const run = await runWithHog(() => faultRun(driver, FAULT_RUN_SHORT));
      // The faults and the seed come with a failure, so a run can be repeated.
      expect({
        driver,
        problems: faultRunProblems(run),
        otherErrors: run.otherErrors,
        fencing: run.fencingDetails,
        leftUntold: run.leftUntoldDetails,
        faults: run.faults,
      }).toEqual({
        driver,
        problems: [],
        otherErrors: [],
        fencing: [],
        leftUntold: [],
        faults: run.faults,
      });
      expect(run.faults.length).toBeGreaterThanOrEqual(3);
      expect(run.sections).toBeGreaterThan(500);
    }, 240_000);
  }

  it('the naive control (SET NX PX, unfenced read-modify-write) overlaps, loses updates and leaves untold under the same stalls', async () => {
    const run = await runWithHog(() =>
      faultRun('naive', { ...FAULT_RUN_SHORT, faultMs: 12_000, kinds: ['sigstop', 'block'], tail: false }),
    );
    expect(run.unexplainedOverlaps).toBeGreaterThan(0);
    expect(run.lostUpdates).toBeGreaterThan(0);
    // Its holders have no `lost` to read: one whose key went to another holder leaves none the wiser (the holders-left-untold count can fail).
    expect(run.holdersLeftUntold).toBeGreaterThan(0);
  }, 240_000);
});
