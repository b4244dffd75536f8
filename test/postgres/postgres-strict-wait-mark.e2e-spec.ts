import { Client } from 'pg';
import { lockStatements } from 'nestjs-serialized/providers/postgres/postgres-lock.statements';
import { TEST_DATABASE_URL } from '../support/services';
import { waitFor } from '../support/timing';

/**
 * Strict local hand-off asks the server whether another session waits for the key
 * before it keeps the lock (`unlockIfWaited`). It used to read pg_locks, which
 * materialises every lock of the server: with 10,000 keys held, 16 ms per hand-off,
 * and the benchmark's 10,000 keys × 8 callers on the strict default ended with 55,412
 * of 80,000 callers timed out. Now a wait marks itself for its statement's length
 * (a shared two-int4 transaction lock on the key's bits) and the check is one
 * exclusive try of that mark. These cases hold the answer to the same question the
 * pg_locks query answered — on real sessions, with the server's lock table full.
 */
describe('PostgreSQL strict hand-off: the wait mark', () => {
  const SEQUENCE = 'nsz_wait_mark_spec_seq';
  const statements = lockStatements(SEQUENCE);
  const key = String(0x1234_5678_9abc_def0n - 2n ** 63n); // a negative bigint: the sign bits reach both halves
  const clients: Client[] = [];
  const open = async (): Promise<Client> => {
    const client = new Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    clients.push(client);
    return client;
  };
  const firstCell = async (client: Client, query: ReturnType<typeof statements.unlockIfWaited>) =>
    (await client.query(query)).rows[0]?.[0] as unknown;
  const waitingFor = async (inspector: Client, pid: number) =>
    (await inspector.query("SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted", [pid]))
      .rows[0].n as number;
  const marksOf = async (inspector: Client, pid: number) =>
    (await inspector.query("SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND objsubid = 2", [pid]))
      .rows[0].n as number;
  const pidOf = async (client: Client) => (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;

  let noise: Client;
  let inspector: Client;

  beforeAll(async () => {
    inspector = await open();
    await inspector.query(`CREATE SEQUENCE IF NOT EXISTS ${SEQUENCE} INCREMENT BY 1024`);
    // 10,000 other keys held by another session: the server's lock table is full.
    noise = await open();
    await noise.query('SELECT count(pg_advisory_lock(700000000 + i)) FROM generate_series(1, 10000) AS i');
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  });

  it('keeps the lock while nobody waits, and unlocks for a session that waits (which then holds it)', async () => {
    const holder = await open();
    const waiter = await open();
    await holder.query(statements.lock(key, '5000ms'));
    // Nobody waits: kept (null), and still held.
    expect(await firstCell(holder, statements.unlockIfWaited(key))).toBeNull();
    expect((await inspector.query('SELECT pg_try_advisory_lock($1::bigint) AS got', [key])).rows[0].got).toBe(false);

    const waiterPid = await pidOf(waiter);
    const waited = waiter.query(statements.lock(key, '5000ms'));
    await waitFor(async () => (await waitingFor(inspector, waiterPid)) === 1, 5_000, 'the waiter queued in the server');
    expect(await marksOf(inspector, waiterPid)).toBe(1);
    // Someone waits: unlocked (true), and the waiter holds the key.
    expect(await firstCell(holder, statements.unlockIfWaited(key))).toBe(true);
    const granted = await waited;
    expect(granted.rows[0][0]).toMatch(/^\d+$/);
    // Its statement ended: its mark went with it, so the next check sees nobody.
    expect(await marksOf(inspector, waiterPid)).toBe(0);
    expect(await firstCell(waiter, statements.unlockIfWaited(key))).toBeNull();
    await waiter.query(statements.unlock(key));
  });

  it('a wait that timed out leaves no mark behind', async () => {
    const holder = await open();
    const waiter = await open();
    await holder.query(statements.lock(key, '5000ms'));
    await expect(waiter.query(statements.lock(key, '100ms'))).rejects.toMatchObject({ code: '55P03' });
    expect(await marksOf(inspector, await pidOf(waiter))).toBe(0);
    expect(await firstCell(holder, statements.unlockIfWaited(key))).toBeNull();
    await holder.query(statements.unlock(key));
  });

  it('a wait that starts while a check holds the mark still marks itself once the check is over', async () => {
    const holder = await open();
    const checker = await open();
    const waiter = await open();
    await holder.query(statements.lock(key, '5000ms'));
    // A check (another session's try, or a strict holder's unlockIfWaited) holds the mark
    // exclusive for its statement's length; here its transaction stands in for that instant.
    await checker.query('BEGIN');
    await checker.query('SELECT pg_advisory_xact_lock(($1::bigint >> 32)::int, (($1::bigint << 32) >> 32)::int)', [key]);
    const waiterPid = await pidOf(waiter);
    const waited = waiter.query(statements.lock(key, '5000ms'));
    await new Promise((resolve) => setTimeout(resolve, 1));
    await checker.query('COMMIT');
    await waitFor(async () => (await waitingFor(inspector, waiterPid)) === 1, 5_000, 'the waiter queued in the server');
    // The wait is marked: the holder's check sees it and unlocks for it (a missed mark kept the key: null).
    expect(await marksOf(inspector, waiterPid)).toBe(1);
    expect(await firstCell(holder, statements.unlockIfWaited(key))).toBe(true);
    const granted = await waited;
    expect(granted.rows[0][0]).toMatch(/^\d+$/);
    await waiter.query(statements.unlock(key));
  });

  it("an application's own two-int4 lock on the same bits never blocks a wait", async () => {
    const app = await open();
    const waiter = await open();
    const hi = Number(BigInt.asIntN(32, BigInt(key) >> 32n));
    const lo = Number(BigInt.asIntN(32, BigInt(key)));
    await app.query('SELECT pg_advisory_lock($1::int, $2::int)', [hi, lo]);
    // The key itself is free: the wait gets it at once, though its mark could not be taken.
    const row = await waiter.query(statements.lock(key, '1000ms'));
    expect(row.rows[0][0]).toMatch(/^\d+$/);
    await waiter.query(statements.unlock(key));
    await app.query('SELECT pg_advisory_unlock($1::int, $2::int)', [hi, lo]);
  });
});
