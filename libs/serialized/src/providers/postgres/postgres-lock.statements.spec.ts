import { lockStatements, quoteSequenceName } from './postgres-lock.statements';

describe('postgres lock statements', () => {
  it('quotes plain and schema-qualified sequence names', () => {
    expect(quoteSequenceName('fencing')).toBe('"fencing"');
    expect(quoteSequenceName('locks.fencing_token')).toBe('"locks"."fencing_token"');
  });

  it.each(['', 'a.b.c', 'x"; DROP TABLE t; --', '1abc', 'has space', "o'brien"])('rejects %j as a sequence name', (name) => {
    expect(() => quoteSequenceName(name)).toThrow(/fencingSequence/);
  });

  it('locks, draws the token and reports the session in one statement, with a per-statement lock_timeout', () => {
    const statements = lockStatements('nestjs_serialized_fencing_token');
    const lock = statements.lock('42', '1500ms');
    expect(lock.values).toEqual(['42', '1500ms']);
    expect(lock.name).toBeDefined();
    // lock_timeout is local to the statement's transaction (is_local = true), never a session SET.
    // Evaluated inside out: the budget and the wait mark, the lock, lock_timeout back to 0, then the token.
    expect(lock.text).toBe(
      `SELECT nextval('"nestjs_serialized_fencing_token"'::regclass)::text, pg_backend_pid() FROM (` +
        `SELECT set_config('lock_timeout', '0', true) FROM (` +
        `SELECT pg_advisory_lock($1::bigint) FROM (SELECT set_config('lock_timeout', $2, true), ` +
        `pg_try_advisory_xact_lock_shared(($1::bigint >> 32)::int, (($1::bigint << 32) >> 32)::int) OFFSET 0) AS wait OFFSET 0` +
        `) AS locked OFFSET 0) AS granted`,
    );
  });

  it('settles a token on tryLock only when the lock was taken: the offered one while no session drew since, else a draw', () => {
    const { tryLock, unlock } = lockStatements('seq');
    expect(tryLock('7').text).toMatch(
      /CASE WHEN pg_try_advisory_lock\(\$1::bigint\) THEN CASE WHEN pg_sequence_last_value\('"seq"'::regclass\) = \$2::bigint THEN \$3::text ELSE nextval/,
    );
    expect(tryLock('7').values).toEqual(['7', null, null]);
    expect(tryLock('7', { drawn: '1025', token: '1030' }).values).toEqual(['7', '1025', '1030']);
    expect(unlock('7')).toMatchObject({ text: 'SELECT pg_advisory_unlock($1::bigint)', values: ['7'] });
  });

  it("names its prepared statements within PostgreSQL's 63 bytes, distinct per sequence, whatever the sequence name", () => {
    const long = `${'s'.repeat(63)}.${'n'.repeat(63)}`;
    const names = (sequence: string) => {
      const st = lockStatements(sequence);
      return [
        st.lock('1', '1ms').name,
        st.tryLock('1').name,
        st.unlock('1').name,
        st.tryLockMany(['1']).name,
        st.unlockMany(['1']).name,
      ] as string[];
    };
    for (const name of [...names(long), ...names('seq')]) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
    // Truncated by the server, two sequences' statements would share a name on one connection.
    expect(names(long)[0]).not.toBe(names(`${'s'.repeat(63)}.${'n'.repeat(62)}m`)[0]);
    expect(new Set(names(long)).size).toBe(5);
  });
});
