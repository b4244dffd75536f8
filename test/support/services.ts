/**
 * Where the suites find the real services. CI (.ci/run) starts them when they are
 * down; the global set-up refuses to run without them (it never skips a suite).
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_MYSQL_URL = process.env.TEST_MYSQL_URL ?? process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
