/**
 * `@OncePerTick` with the PostgreSQL driver: three app instances in OS processes of
 * their own, one database (docs/scheduling.md). Scenarios: support/once-per-tick.scenarios.ts.
 */
import { describeOncePerTick } from './support/once-per-tick.scenarios';

describeOncePerTick('postgres');
