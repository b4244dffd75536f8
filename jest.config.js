/**
 * One `jest` run covers the unit specs beside the source (libs/, src/) and the
 * end-to-end, contract and multi-process suites in test/. Every suite imports the
 * library as a user would: by its package name, `nestjs-serialized`.
 */
// Workers are forked with this environment. A worker's heap may pass V8's default limit
// (about 4 GB) when a burst suite (test/redis/redis-overload.alone-spec.ts: 30,000
// acquisitions at once beside a CPU hog) runs in a worker that earlier suites left large:
// one full run died so, and a worker at 3.4 GB resident was seen in another. The machines
// have 24 GB for 3 workers; `logHeapUsage` prints each suite's heap, to find the next one.
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=8192`.trim();

/** @type {import('jest').Config} */
module.exports = {
  rootDir: '.',
  // Nest's logs are buffered per test and printed only for a failing one (a passing run is quiet).
  testEnvironment: '<rootDir>/test/setup/quiet-environment.js',
  setupFilesAfterEnv: ['<rootDir>/test/setup/quiet-logs.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  // `*.alone-spec.ts` (stress tests that bring their own load, a CPU hog; the consumer
  // test, whose compilers would be load beside timing-sensitive suites) run after the
  // rest, one at a time, by a second `jest --runInBand --testRegex` in `npm test`: beside
  // the other suites the host's load would be theirs plus everything else.
  testRegex: ['(libs|src)/.*\\.spec\\.ts$', 'test/.*\\.(e2e-spec|spec)\\.ts$'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  moduleNameMapper: {
    '^nestjs-serialized$': '<rootDir>/libs/serialized/src',
    '^nestjs-serialized/(.*)$': '<rootDir>/libs/serialized/src/$1',
  },
  // `npm run build` writes the library's package.json to dist/: keep it out of the module map.
  // The global set-up compiles the repository to .cache/test-build for child processes.
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/.cache/'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/dist/', '<rootDir>/.cache/'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  testTimeout: 30000,
  // Three workers on the two cores CI has: most suites wait on child processes, servers and
  // timers, not the CPU (the host's load stayed near 1.5 with two). On 2026-12-07 the same
  // 1,485 tests took 400 s with two workers and 310 s with three, all passing; every suite
  // that bounds a wait already allows for a busy host (each brings or survives a CPU hog).
  maxWorkers: 3,
  // A worker that grew past this after a file (the 80,000-acquisition suites) is replaced
  // before the next one, so memory left by one suite never crashes another.
  workerIdleMemoryLimit: '1GB',
  logHeapUsage: true,
};
