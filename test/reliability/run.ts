/**
 * `npm run reliability`: the full form of the reliability suite (< 10 minutes),
 * which rewrites docs/reliability-report.md. The short form runs inside `npm test`
 * (test/reliability/reliability.e2e-spec.ts) and never writes the report.
 *
 * `npm run reliability -- --fault-runs`: the full form of the randomized fault runs
 * alone (redis, postgres, the naive control; about 6 minutes), which rewrites only
 * the report's fault-run section and the fault run's naive control row.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildForTests, TEST_BUILD_ENV } from '../setup/compiled-build';
import { checkServices } from '../setup/services-check';
import { faultRunProblems } from './fault-run.scenario';
import { FULL } from './reliability.scenarios';
import { renderReport, runSuite, spliceFaultRuns } from './reliability.suite';

const FAULT_RUNS = ['fault run redis', 'fault run postgres', 'fault run mysql', 'fault run naive'];

async function main(): Promise<void> {
  await checkServices();
  process.env[TEST_BUILD_ENV] = buildForTests();
  const faultRunsAlone = process.argv.includes('--fault-runs');
  const result = await runSuite(FULL, 'full', (line) => console.log(line), faultRunsAlone ? FAULT_RUNS : undefined);
  const out = path.resolve(__dirname, '..', '..', 'docs', 'reliability-report.md');
  fs.writeFileSync(out, faultRunsAlone ? spliceFaultRuns(fs.readFileSync(out, 'utf8'), result) : renderReport(result));
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
  const bad = result.rows.filter((r) => r.overlaps || r.fencingViolations || r.lostUpdates || r.duplicates || r.orderViolations);
  if (bad.length) {
    console.error(
      `rows with overlaps, fencing violations, lost updates, duplicates or out-of-order service: ${bad.map((r) => `${r.scenario} (${r.provider})`).join('; ')}`,
    );
    process.exitCode = 1;
  }
  const badRuns = result.faultRuns.filter((f) => faultRunProblems(f).length);
  if (badRuns.length) {
    const details = (f: (typeof badRuns)[number]) => [...f.fencingDetails, ...f.leftUntoldDetails];
    console.error(
      `fault runs with problems: ${badRuns.map((f) => `${f.driver}: ${faultRunProblems(f).join(', ')}${details(f).length ? ` (${details(f).join('; ')})` : ''}`).join('; ')}`,
    );
    process.exitCode = 1;
  }
  if (!result.controls.some((c) => c.scenario.includes('randomized fault run') && c.wrong > 0)) {
    console.error('the naive control of the fault run showed nothing wrong: the run did not exercise the faults');
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
