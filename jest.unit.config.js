/**
 * `npm run test:unit`: the fast loop. Every unit spec beside the source, the
 * in-memory driver's suites and the checks of docs, public API and structure, with
 * no service to start (no Redis, PostgreSQL, MariaDB, SPIN) and no compiled build
 * for child processes. Specs under test/ that need a server stay out (e.g.
 * test/bullmq/job-helpers.spec.ts builds a BullMQ queue on Redis). `npm test`
 * remains the whole thing.
 */
/** @type {import('jest').Config} */
const base = require('./jest.config');

const { globalSetup, globalTeardown, ...rest } = base;
void globalSetup;
void globalTeardown;

module.exports = {
  ...rest,
  testRegex: [
    '(libs|src)/.*\\.spec\\.ts$',
    'test/contract/in-memory\\.contract\\.spec\\.ts$',
    'test/e2e/(for-root-async|keys|key-sets|lifecycle|per-call-options|serialized-http)\\.e2e-spec\\.ts$',
    'test/docs/options-docs\\.spec\\.ts$',
    'test/package/(doc-blocks|public-api)\\.spec\\.ts$',
    'test/testing/recipes-doc\\.spec\\.ts$',
    'test/structure/.*\\.spec\\.ts$',
    'test/models/vocabulary\\.spec\\.ts$',
  ],
};
