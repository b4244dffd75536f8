import path from 'node:path';
import { WorkerProcess } from '../support/processes';
import { TEST_MYSQL_URL } from '../support/services';

const NEEDS_MYSQL2 =
  "SerializedConfigError: nestjs-serialized: invalid configuration:\n  - driver 'mysql' needs the optional peer dependency mysql2: npm install mysql2";

/**
 * `mysql2` is an optional peer: an app on another driver never needs it, and an app
 * that picks the mysql driver without it stops at start-up with one error naming the
 * package and how to install it — never at the first request.
 */
describe('without mysql2 installed', () => {
  it("driver 'mysql' (in code or from SERIALIZED_DRIVER) stops start-up naming mysql2; the memory driver runs and never loads it", async () => {
    const hide = path.join(__dirname, 'workers', 'hide-mysql2.js');
    const worker = WorkerProcess.start('without-mysql2', 'test/mysql/workers/without-mysql2.ts', {
      MYSQL_URL: TEST_MYSQL_URL,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${hide}`.trim(),
    });
    try {
      const report = await worker.waitForType('report', 90_000);
      expect(report).toEqual({
        type: 'report',
        // The trick works: mysql2 cannot be resolved in that process.
        resolvable: false,
        memory: 'started, ran',
        mysql: `at start-up: ${NEEDS_MYSQL2}`,
        env: `at start-up: ${NEEDS_MYSQL2}`,
        constructed: NEEDS_MYSQL2,
        loaded: false,
      });
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
