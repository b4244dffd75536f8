/**
 * Compiled by the consumer test with every optional peer installed: the clients of
 * ioredis and pg fit the options that take them, and what is not one does not.
 */
import { Cluster, Redis } from 'ioredis';
import { Pool } from 'pg';
import { PostgresLockProvider, RedisLockProvider, SerializedModule } from 'nestjs-serialized';

const redis = new Redis({ lazyConnect: true });
const cluster = new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true });
const pool = new Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });

export const modules = [
  SerializedModule.forRoot({ driver: 'redis', redis: { client: redis } }),
  SerializedModule.forRoot({ driver: 'redis', redis: { client: cluster } }),
  SerializedModule.forRoot({ driver: 'postgres', postgres: { pool } }),
];
export const providers = [
  new RedisLockProvider({ client: redis }),
  new RedisLockProvider({ client: cluster }),
  new PostgresLockProvider({ pool }),
];

// @ts-expect-error a URL is not a client
export const notAClient = SerializedModule.forRoot({ driver: 'redis', redis: { client: 'redis://127.0.0.1:6379' } });
// @ts-expect-error a Redis client is not a pg Pool
export const notAPool = new PostgresLockProvider({ pool: redis });
