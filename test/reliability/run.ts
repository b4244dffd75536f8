/**
 * `npm run reliability`: the full form of the reliability suite (< 10 minutes),
 * which rewrites docs/reliability-report.md. The short form runs inside `npm test`
 * (test/reliability/reliability.e2e-spec.ts) and never writes the report.
 *
 * `npm run reliability -- --fault-runs`: the full form of the randomized fault runs
 * alone (redis, postgres, the naive control; about 6 minutes), which rewrites only
 * the report's fault-run section and the fault run's naive control row.
 *
 * `npm run reliability -- --fault-run mysql` (or redis, postgres): that driver's
 * fault run alone (full form, about 3 minutes), which rewrites only its row of the
 * fault-run table and says so under the table.
 *
 * `npm run reliability -- --shaped-fault-runs` (add `--short` for the short sizes): the
 * shaped fault runs (several holders per key: redis, postgres and a miswired control;
 * test/reliability/shaped-fault-run.report.ts), which rewrite only their own section;
 * `-- --shaped-fault-run redis` (or postgres): that row alone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildForTests, TEST_BUILD_ENV } from '../setup/compiled-build';
import { checkServices } from '../setup/services-check';
import { faultRunProblems } from './fault-run.scenario';
import { FULL } from './reliability.scenarios';
import { renderReport, runSuite, spliceFaultRunRows, spliceFaultRuns } from './reliability.suite';
import { asksShapedFaultRuns, runShapedFaultRuns } from './shaped-fault-run.report';

const FAULT_RUNS = ['fault run redis', 'fault run postgres', 'fault run mysql', 'fault run naive'];

async function main(): Promise<void> {
  await checkServices();
  process.env[TEST_BUILD_ENV] = buildForTests();
  if (asksShapedFaultRuns(process.argv)) {
    const problems = await runShapedFaultRuns(process.argv, (line) => console.log(line));
    if (problems.length) {
      console.error(`shaped fault runs with problems: ${problems.join('; ')}`);
      process.exitCode = 1;
    }
    return;
  }
  const faultRunsAlone = process.argv.includes('--fault-runs');
  const oneDriver = oneFaultRun(process.argv);
  const only = oneDriver ? [`fault run ${oneDriver}`] : faultRunsAlone ? FAULT_RUNS : undefined;
  const result = await runSuite(FULL, 'full', (line) => console.log(line), only);
  const out = path.resolve(__dirname, '..', '..', 'docs', 'reliability-report.md');
  const before = () => fs.readFileSync(out, 'utf8');
  fs.writeFileSync(
    out,
    oneDriver ? spliceFaultRunRows(before(), result) : faultRunsAlone ? spliceFaultRuns(before(), result) : renderReport(result),
  );
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
  // One driver's run alone has no naive control beside it (its row in the report stays).
  if (!oneDriver && !result.controls.some((c) => c.scenario.includes('randomized fault run') && c.wrong > 0)) {
    console.error('the naive control of the fault run showed nothing wrong: the run did not exercise the faults');
    process.exitCode = 1;
  }
}

/** `--fault-run <driver>`: the one real driver whose fault run runs alone, if asked. */
function oneFaultRun(argv: string[]): 'redis' | 'postgres' | 'mysql' | undefined {
  const i = argv.findIndex((a) => a === '--fault-run' || a.startsWith('--fault-run='));
  if (i < 0) return undefined;
  const driver = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
  if (driver !== 'redis' && driver !== 'postgres' && driver !== 'mysql') {
    throw new Error(`--fault-run takes redis, postgres or mysql, got ${JSON.stringify(driver)}`);
  }
  return driver;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
