import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { faultRunProblems, type FaultRunResult } from './fault-run.scenario';
import { shapeViolations } from './shaped-fault-run.checker';
import { shapedControl, shapedFaultRun, SHAPE, SHAPED_FAULT_RUN_FULL, SHAPED_FAULT_RUN_SHORT } from './shaped-fault-run.scenario';
import { withCpuHog } from './support/environment';

const BEGIN = '<!-- shaped fault runs: written by npm run reliability -- --shaped-fault-runs -->';
const END = '<!-- end of shaped fault runs -->';
/** Where the section goes when the report has none yet: before the Sentinel runs, else at the end. */
const BEFORE = '<!-- sentinel fail-over runs';

const PROBLEMS = 'Problems found (each must be 0 for a real driver; the first few cases named):';

const n = (value: number) => value.toLocaleString('en-US');

/** The control's row is told apart by its provider cell. */
const CONTROL = 'redis, miswired (control)';

/** One row of the shaped table. */
function shapedRow(run: FaultRunResult, provider: string): string {
  const s = run.shape!;
  return `| ${provider} | ${run.seed} | ${Math.round(run.durationMs / 1000)} s | ${run.faults.length}: ${run.faults.join(', ')} | ${n(s.groupSections)} / ${n(s.readerSections)} / ${n(s.writerSections)} | ${s.mostUntoldGroupHolders} | ${s.groupOverCap} | ${n(s.readersTogether)} | ${s.writerBesideOthers} | ${run.lostUpdates} | ${s.duplicateTokens} / ${s.orderViolations} | ${run.overlapsTold} | ${run.holdersLeftUntold} of ${run.holdersOvertaken} | ${run.stuckKeys.length ? run.stuckKeys.join(', ') : `0 (longest gap ${(run.longestTailGapMs / 1000).toFixed(1)} s)`} | ${run.tailBackendErrors} | ${run.leaked} |`;
}

function header(form: 'short' | 'full', startedAt: Date, durationMs: number): string[] {
  return [
    '## Shaped fault runs (several holders of one key)',
    '',
    `The randomized fault run above (same processes × loops, faults one at a time, fault-free tail) with 4 keys of two shapes (docs/semantics.md, "Several holders of one key"): k0, k1 are group keys, every caller \`concurrency: ${SHAPE.limit}\`; k2, k3 are reader/writer keys, each section (seeded) a reader (\`shared: true\`, about 65 %) or a writer (plain). Group members and readers read the key's ledger row; writers do the claim-first fenced read-modify-write. Judged by test/reliability/shaped-fault-run.checker.ts: a holder told it lost its place (signal aborted, \`lock.lost\`) or killed no longer counts. *Most untold together*: the most group-key holders nobody told inside at once (must be ${SHAPE.limit}: the cap reached, never passed); *past the cap*: entries that made more. *Readers together*: reader entries beside readers only (must happen). *Writer beside another*: entries where a writer and another holder nobody told were inside together (a writer entering beside anyone, a reader beside a writer). *Tokens twice / out of order*: a fencing token entered twice on a key; on reader/writer keys, among holders nobody told, a writer's token not above every earlier entry's or a reader's not above every earlier writer's. *Left untold (of places taken)*: holders whose place another took while they were inside (a writer entered beside them, a reader beside a writer, one past the cap) that left without having read the loss. The control is the Redis driver miswired under stalls past the lease: group callers pass \`concurrency: 1000\`, writers \`shared: true\` with an unfenced read-modify-write; it must fail the checker.`,
    '',
    `Written by \`npm run reliability -- --shaped-fault-runs\` (${form} form: ${form === 'full' ? SHAPED_FAULT_RUN_FULL.faultMs / 1000 : SHAPED_FAULT_RUN_SHORT.faultMs / 1000} s of faults per driver, ${SHAPED_FAULT_RUN_FULL.processes} processes × ${SHAPED_FAULT_RUN_FULL.loops} loops) on ${startedAt.toISOString()}, in ${Math.round(durationMs / 1000)} s, on ${os.cpus().length} cores, Node.js ${process.version}, load average at the end ${loadavg()}, each run with a CPU hog beside it.`,
    '',
    '| provider | seed | duration | faults | sections (group / reader / writer) | most untold together (group) | past the cap | readers together | writer beside another | lost updates | tokens twice / out of order | overlaps (holder told) | left untold (of places taken) | stuck keys | 503s in the tail | leaked |',
    '| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |',
  ];
}

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');

/** `report` with its shaped section replaced by (or given) `section`. */
function splice(report: string, section: string[]): string {
  const text = [BEGIN, ...section, END].join('\n');
  const at = report.indexOf(BEGIN);
  if (at >= 0) return `${report.slice(0, at)}${text}${report.slice(report.indexOf(END) + END.length)}`;
  const before = report.indexOf(BEFORE);
  return before < 0 ? `${report.trimEnd()}\n\n${text}\n` : `${report.slice(0, before)}${text}\n\n${report.slice(before)}`;
}

/** The lines of the shaped section now in `report` (between its markers), if any. */
function sectionOf(report: string): string[] | undefined {
  const at = report.indexOf(BEGIN);
  return at < 0
    ? undefined
    : report
        .slice(at + BEGIN.length, report.indexOf(END))
        .split('\n')
        .slice(1, -1);
}

/**
 * `npm run reliability -- --shaped-fault-runs` (redis, postgres and the control; the
 * whole section) or `-- --shaped-fault-run redis` (that row alone, with a line saying
 * so); `--short` for the short sizes. Returns the problems found (empty: clean).
 */
export async function runShapedFaultRuns(
  argv: string[],
  log: (line: string) => void,
  reportPath = path.resolve(__dirname, '..', '..', 'docs', 'reliability-report.md'),
): Promise<string[]> {
  const form = argv.includes('--short') ? 'short' : 'full';
  const size = form === 'full' ? SHAPED_FAULT_RUN_FULL : SHAPED_FAULT_RUN_SHORT;
  const one = oneShapedRun(argv);
  const startedAt = new Date();
  const runs: [string, FaultRunResult][] = [];
  for (const driver of one ? [one] : (['redis', 'postgres'] as const)) {
    runs.push([driver, await withCpuHog(() => shapedFaultRun(driver, size, log))]);
    log(`shaped ${driver}: ${shapedRow(runs[runs.length - 1][1], driver)}`);
  }
  if (!one) {
    runs.push([CONTROL, await withCpuHog(() => shapedControl(size, log))]);
    log(`shaped control: ${shapedRow(runs[runs.length - 1][1], CONTROL)}`);
  }
  const problems = runs
    .filter(([provider]) => provider !== CONTROL)
    .flatMap(([provider, run]) =>
      faultRunProblems(run).map((p) => {
        const details = [...run.fencingDetails, ...run.leftUntoldDetails];
        return `${provider}: ${p}${details.length ? ` (${details.join('; ')})` : ''}`;
      }),
    );
  const control = runs.find(([provider]) => provider === CONTROL)?.[1];
  if (control && !(shapeViolations(control.shape!).length && control.lostUpdates > 0))
    problems.push('the miswired control passed the checker: the run did not exercise what it checks');

  const report = fs.readFileSync(reportPath, 'utf8');
  const durationMs = Date.now() - startedAt.getTime();
  let section: string[];
  const existing = sectionOf(report);
  if (one && existing) {
    section = [...existing];
    const at = section.findIndex((line) => line.startsWith(`| ${one} | `));
    const row = shapedRow(runs[0][1], one);
    if (at >= 0) section[at] = row;
    else section.splice(section.findIndex((line) => line.startsWith('| ---')) + 1, 0, row);
    const note = `The ${one} row was regenerated on its own by \`npm run reliability -- --shaped-fault-run ${one}\``;
    section = section.filter((line) => !line.startsWith(note) && !line.startsWith(`- ${one}: `));
    // The problems' heading goes with the last problem it listed.
    const heading = section.indexOf(PROBLEMS);
    if (heading >= 0 && !section.slice(heading + 1).some((line) => line.startsWith('- '))) section.splice(heading, 1);
    section = section.filter((line, i) => line !== '' || section[i - 1] !== '');
    while (section[section.length - 1] === '') section.pop();
    if (problems.length && !section.includes(PROBLEMS)) section.push('', PROBLEMS, '');
    section.push(...problems.map((p) => `- ${p}`));
    section.push(
      '',
      `${note} (${form} form) on ${startedAt.toISOString()}, in ${Math.round(durationMs / 1000)} s, load average at the end ${loadavg()}; the other rows are from the run named above.`,
    );
  } else
    section = [
      ...header(form, startedAt, durationMs),
      ...runs.map(([provider, run]) => shapedRow(run, provider)),
      ...(problems.length ? ['', PROBLEMS, '', ...problems.map((p) => `- ${p}`)] : []),
    ];
  fs.writeFileSync(reportPath, splice(report, section));
  log(`wrote the shaped fault runs into ${path.relative(process.cwd(), reportPath)}`);
  return problems;
}

/** `--shaped-fault-run <driver>`: the one driver whose shaped run runs alone, if asked. */
function oneShapedRun(argv: string[]): 'redis' | 'postgres' | undefined {
  const i = argv.findIndex((a) => a === '--shaped-fault-run' || a.startsWith('--shaped-fault-run='));
  if (i < 0) return undefined;
  const driver = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
  if (driver !== 'redis' && driver !== 'postgres')
    throw new Error(`--shaped-fault-run takes redis or postgres, got ${JSON.stringify(driver)}`);
  return driver;
}

/** Whether `argv` asks for the shaped fault runs (all, or one driver's). */
export function asksShapedFaultRuns(argv: string[]): boolean {
  return argv.some((a) => a === '--shaped-fault-runs' || a === '--shaped-fault-run' || a.startsWith('--shaped-fault-run='));
}
