import type * as Pg from 'pg';

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
    const missing = error as NodeJS.ErrnoException;
    // Only pg itself missing, not a module pg failed to load.
    if (missing?.code === 'MODULE_NOT_FOUND' && /['"]pg['"]/.test(missing.message)) {
      throw new Error(PG_MISSING_MESSAGE, { cause: error });
    }
    throw error;
  }
}
