import Redis from 'ioredis';
import { Pool } from 'pg';
import { resolveSerializedOptions } from '../config/serialized-options.resolver';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { describeBackend } from './startup-line.logger';

describe('describeBackend (the start-up line)', () => {
  it('names a provider given in code, not the driver option it makes irrelevant', () => {
    const provider = new InMemoryLockProvider();
    expect(describeBackend(resolveSerializedOptions({ provider, driver: 'redis' }, {}))).toBe(
      'provider InMemoryLockProvider given in code (the app does not close it)',
    );
  });

  it("describes an app's own Redis client from its options, without its password", () => {
    const client = new Redis({ host: 'cache.internal', port: 6380, db: 2, password: 'client-secret', lazyConnect: true });
    try {
      const line = describeBackend(resolveSerializedOptions({ driver: 'redis', redis: { client }, keyPrefix: 'app' }));
      expect(line).toBe(`driver=redis at redis://cache.internal:6380/2 (the app's client), key prefix "app"`);
    } finally {
      client.disconnect();
    }
  });

  it("describes an app's own pg Pool from its options, without its password", async () => {
    const pool = new Pool({ host: 'db.internal', port: 5433, database: 'shop', user: 'app', password: 'pool-secret' });
    try {
      const line = describeBackend(resolveSerializedOptions({ driver: 'postgres', postgres: { pool }, keyPrefix: 'app' }));
      expect(line).toBe(`driver=postgres at postgres://db.internal:5433/shop (the app's pool, user app), key prefix "app"`);
    } finally {
      await pool.end();
    }
  });

  it('redacts the password of a pool built from a connection string', async () => {
    const pool = new Pool({ connectionString: 'postgres://app:pool-secret@db.internal:5432/shop' });
    try {
      const line = describeBackend(resolveSerializedOptions({ driver: 'postgres', postgres: { pool } }));
      expect(line).toContain('postgres://app:***@db.internal:5432/shop');
      expect(line).not.toContain('pool-secret');
    } finally {
      await pool.end();
    }
  });
});
