import { sentinelFaultRun, sentinelFaultRunProblems, SENTINEL_FAULT_RUN_SHORT } from './sentinel-fault-run.scenario';

/**
 * The short form of the Sentinel fault run (the full form: `npm run
 * reliability:sentinel`): with `replicas: { acks: 2 }` (every replica), no fail-over
 * kind hands a key or a fencing token out twice.
 */
describe('randomized Sentinel fault run (short form)', () => {
  it('with replicas: { acks: 2 } on two replicas: no token handed out twice, no fencing inversion, no overlap, no lost update', async () => {
    const run = await sentinelFaultRun(2, SENTINEL_FAULT_RUN_SHORT);
    expect({ problems: sentinelFaultRunProblems(run), otherErrors: run.otherErrors }).toEqual({ problems: [], otherErrors: [] });
    expect(run.failovers).toHaveLength(SENTINEL_FAULT_RUN_SHORT.failovers);
    expect(run.sections).toBeGreaterThan(100);
  }, 300_000);
});
