/**
 * Runs spec files on node:test (with the jest shim) between the same global
 * set-up and tear-down that jest.config.js names, so the Redis Cluster and the
 * service checks are the ones `npm test` uses.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import globalSetup from '../../test/setup/global-setup';
import globalTeardown from '../../test/setup/global-teardown';

async function main(): Promise<void> {
  const files = process.argv.slice(2);
  if (files.length === 0) throw new Error('run-suites: name the spec files to run');
  await globalSetup();
  let status: number;
  try {
    const result = spawnSync(
      process.execPath,
      [
        '-r',
        'ts-node/register/transpile-only',
        '-r',
        'tsconfig-paths/register',
        '-r',
        path.join(__dirname, 'jest-on-node-test.js'),
        '--test',
        '--test-concurrency=1',
        '--test-reporter=spec',
        ...files,
      ],
      { stdio: 'inherit' },
    );
    status = result.status ?? 1;
  } finally {
    await globalTeardown();
  }
  process.exit(status);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
