import type * as Pg from 'pg';
import { isMissingPackage, missingPeerError } from '../../config/optional.peer';

/** The part of the `pg` module the provider uses. */
export type PgModule = Pick<typeof Pg, 'Client' | 'Pool'>;

/** The message a user sees when `driver: 'postgres'` is chosen without `pg` installed. */
export const PG_MISSING_MESSAGE = "driver 'postgres' needs the optional peer dependency pg: npm install pg";

/**
 * Loads `pg` on first use. The library's entry point re-exports the PostgreSQL
 * provider, so importing `pg` at module load would break every app on the
 * in-memory or Redis driver that does not install it.
 *
 * @param load how to load a module (a test passes one that fails)
 */
export function loadPgDriver(load: (id: string) => unknown = require): PgModule {
  try {
    return load('pg') as PgModule;
  } catch (error) {
    // Only pg itself missing, not a module pg failed to load.
    if (isMissingPackage(error, 'pg')) throw missingPeerError("driver 'postgres'", 'pg');
    throw error;
  }
}
