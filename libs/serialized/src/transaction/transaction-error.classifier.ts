/** SQLSTATE of an error from any adapter: pg's `code`, TypeORM's `driverError`, Prisma's `meta.code`, a `cause`. */
export function sqlStateOf(error: unknown): string | undefined {
  for (let e = error as Record<string, unknown> | undefined, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = e.code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    const meta = e.meta as { code?: unknown } | undefined;
    if (typeof meta?.code === 'string' && /^[0-9A-Z]{5}$/.test(meta.code)) return meta.code;
    e = (e.driverError ?? e.cause) as Record<string, unknown> | undefined;
  }
  return undefined;
}

/** lock_not_available: what lock_timeout raises. */
export const LOCK_NOT_AVAILABLE = '55P03';

/** A concurrent CREATE SEQUENCE IF NOT EXISTS can still collide in the catalog. */
export function isAlreadyCreated(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === '23505' || state === '42P07';
}
