import { cleanFaultRunReport, faultRun, faultRunReport, FAULT_RUN_SHORT } from './fault-run.scenario';
import { withCpuHog } from './support/environment';

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
  for (const driver of ['postgres', 'redis', 'mysql'] as const) {
    it(`${driver}: no lost update, no untold overlap or fencing violation, no stuck key, no 503 in the fault-free tail`, async () => {
      const run = await withCpuHog(() => faultRun(driver, FAULT_RUN_SHORT));
      expect(faultRunReport(run)).toEqual(cleanFaultRunReport(run));
      expect(run.faults.length).toBeGreaterThanOrEqual(3);
      expect(run.sections).toBeGreaterThan(500);
    }, 240_000);
  }

  it('the naive control (SET NX PX, unfenced read-modify-write) overlaps, loses updates and leaves untold under the same stalls', async () => {
    const run = await withCpuHog(() =>
      faultRun('naive', { ...FAULT_RUN_SHORT, faultMs: 12_000, kinds: ['sigstop', 'block'], tail: false }),
    );
    expect(run.unexplainedOverlaps).toBeGreaterThan(0);
    expect(run.lostUpdates).toBeGreaterThan(0);
    // Its holders have no `lost` to read: one whose key went to another holder leaves none the wiser (the holders-left-untold count can fail).
    expect(run.holdersLeftUntold).toBeGreaterThan(0);
  }, 240_000);
});
