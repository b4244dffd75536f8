import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { childEntry } from '../support/child-entry';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';

const ROOT = path.resolve(__dirname, '..', '..');
// The demo and the app instances it starts run from the compiled build (their
// start-up on a busy host is what made the two-instance cases time out).
const DEMO = childEntry('scripts/demo.ts');
// The naive twins must visibly race even on a host so busy that 20 duplicates
// reach the app over more than the default 200 ms task: a wider window (the
// serialized path runs the task once, so this costs it nothing but 1.3 s).
const RACE_WINDOW = { REWARD_TASK_MS: '1500' };

/** The README's first command: it must print the table and succeed on the in-memory default. */
describe('npm run demo', () => {
  it('shows the naive endpoints racing and the serialized ones exact, and exits 0', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...DEMO.env, ...RACE_WINDOW };
    delete env.SERIALIZED_DRIVER;
    const result = spawnSync(process.execPath, DEMO.args, { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
    const output = result.stdout + result.stderr;
    expect(output).toContain('driver: memory, instances: 1');
    expect(output).toMatch(/daily reward .*\| 1 reward credited \(1×201, 19×409\)\s+\| ✔/);
    expect(output).toMatch(/create resource if absent .*\| 1 resource created \(1×201, 19×200\)\s+\| ✔/);
    expect(output).toMatch(/retried payment \(Idempotency-Key\) .*\| 1 payment charged, 20 identical responses, 19 replayed\s+\| ✔/);
    expect(output).toMatch(/long task via BullMQ .*\| 4\/4 built one at a time, in enqueue order \(0 overlaps\)\s+\| ✔/);
    // The race is visible on the naive twins.
    const naiveRewards = Number(/\| (\d+) rewards credited/.exec(output)?.[1]);
    expect(naiveRewards).toBeGreaterThan(1);
    expect(Number(/\| (\d+) payments charged/.exec(output)?.[1])).toBe(20);
    expect(result.status).toBe(0);
  });

  it.each([['redis'], ['postgres']])('holds with two app processes sharing %s', (driver) => {
    const result = spawnSync(process.execPath, [...DEMO.args, '--driver', driver, '--instances', '2'], {
      cwd: ROOT,
      env: { ...process.env, ...DEMO.env, ...RACE_WINDOW, REDIS_URL: TEST_REDIS_URL, DATABASE_URL: TEST_DATABASE_URL },
      encoding: 'utf8',
      timeout: 120_000,
    });
    const output = result.stdout + result.stderr;
    expect(output).toContain(`driver: ${driver}`);
    expect(output).toContain('instances: 2');
    expect(output).toMatch(/daily reward .*\| 1 reward credited \(1×201, 19×409\)\s+\| ✔/);
    expect(output).toMatch(/create resource if absent .*\| 1 resource created \(1×201, 19×200\)\s+\| ✔/);
    expect(output).toMatch(/retried payment \(Idempotency-Key\) .*\| 1 payment charged, 20 identical responses, 19 replayed\s+\| ✔/);
    expect(output).toMatch(/long task via BullMQ .*\| 4\/4 built one at a time, in enqueue order \(0 overlaps\)\s+\| ✔/);
    expect(Number(/\| (\d+) rewards credited/.exec(output)?.[1])).toBeGreaterThan(1);
    expect(result.status).toBe(0);
  });

  it('refuses several instances on the in-memory driver, saying what to use', () => {
    const result = spawnSync(process.execPath, [...DEMO.args, '--instances', '2', '--driver', 'memory'], {
      cwd: ROOT,
      env: { ...process.env, ...DEMO.env },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('needs a backend the instances share: add --driver redis');
  });
});
