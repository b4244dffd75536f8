/**
 * nestjs-serialized/testing — helpers for an app's own tests (docs/testing.md).
 * Nothing here is loaded by the main entry point.
 */

// A unit test: one instance built with `new` gets an in-memory LockService (explicit opt-in).
export { withInMemoryLocks } from './with-in-memory-locks.helper';
export type { WithInMemoryLocksOptions } from './with-in-memory-locks.helper';
// An e2e test on one process: SerializedModule on the in-memory driver.
export { SerializedTestingModule } from './serialized-testing.module';
