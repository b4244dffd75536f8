import { Pool } from 'pg';
import { lockClientConfig } from './lock-client.config';

describe('lockClientConfig', () => {
  it('uses the connection string as given', () => {
    expect(lockClientConfig({ connectionString: 'postgres://u@h:5/db' })).toEqual({ connectionString: 'postgres://u@h:5/db' });
  });

  it("takes the connection settings of the app's pool, not its pool settings or timeouts", async () => {
    const pool = new Pool({
      host: 'db.internal',
      port: 6543,
      user: 'app',
      password: 's3cret',
      database: 'shop',
      ssl: { rejectUnauthorized: false },
      max: 50,
      idleTimeoutMillis: 1234,
      statement_timeout: 5000,
      application_name: 'shop-api',
    });
    const config = lockClientConfig({ pool }) as Record<string, unknown>;
    expect(config).toMatchObject({ host: 'db.internal', port: 6543, user: 'app', database: 'shop', ssl: { rejectUnauthorized: false } });
    // pg.Pool hides the password from enumeration; it must still reach the lock sessions.
    expect(config.password).toBe('s3cret');
    for (const field of ['max', 'idleTimeoutMillis', 'statement_timeout', 'application_name']) expect(config).not.toHaveProperty(field);
    await pool.end();
  });
});
