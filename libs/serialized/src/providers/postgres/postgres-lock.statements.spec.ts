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
        `(SELECT g.i FROM generate_series(1, 40) AS g(i) WHERE CASE WHEN pg_try_advisory_xact_lock_shared(($1::bigint >> 32)::int, (($1::bigint << 32) >> 32)::int) ` +
        `THEN true ELSE (SELECT false FROM pg_sleep(0.0002 + 0 * g.i)) END LIMIT 1) OFFSET 0) AS wait OFFSET 0` +
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

  it('names the statements of holders sharing a key within 63 bytes and apart from each other', () => {
    const { shapes } = lockStatements(`${'s'.repeat(63)}.${'n'.repeat(63)}`);
    const configs = [
      shapes.tryShared('1', '2', '5'),
      shapes.tryReader('2', '5'),
      shapes.unlockShared('1', '5', '2', 'ch'),
      shapes.tryGroup('1', '2', '3', 4, [], '5'),
      shapes.lockGate('1', '2', '5ms'),
      shapes.trySlot('2', '3', 4, [0], '5'),
      shapes.leaveGate('1', '2'),
      shapes.unlockGroup('1', '3', 'ch', '5'),
    ];
    for (const config of configs) expect(Buffer.byteLength(config.name!)).toBeLessThanOrEqual(63);
    expect(new Set(configs.map((config) => config.name)).size).toBe(configs.length);
    expect(shapes.tryGroup('1', '2', '3', 4, [1, 2], '5').values).toEqual(['1', '2', '3', 4, [1, 2], '5']);
  });

  it('a try that shares the key takes nothing past a waiting session, and draws its token only once it is let in', () => {
    const { shapes } = lockStatements('seq');
    // A reader: the gate (shared, for the statement), the wait mark, then the key; then its marker and the look.
    const reader = shapes.tryShared('1', '2', '5').text;
    expect(reader).toContain('CASE WHEN pg_try_advisory_xact_lock_shared($2::bigint) AND pg_try_advisory_xact_lock((');
    expect(reader).toMatch(/^SELECT CASE WHEN z\.inside THEN nextval/);
    // A group: the same first steps; a slot only with the key; its marker only with a slot; all back when refused.
    const group = shapes.tryGroup('1', '2', '3', 4, [], '5').text;
    expect(group).toContain('CASE WHEN pg_try_advisory_xact_lock_shared($2::bigint) AND pg_try_advisory_xact_lock((');
    expect(group).toContain('CASE WHEN a.ok THEN (SELECT g.i FROM generate_series(0, $4::int - 1)');
    expect(group).toContain('NOT (g.i = ANY($5::int[]))');
    // Its marks only with a slot: the two digits of its shape and the key's presence mark, each waited for.
    expect(group).toContain(
      'CASE WHEN slot IS NOT NULL THEN (pg_advisory_lock_shared((($6::bigint & -1024) | ($6::bigint & 31))) IS NOT NULL) AND ',
    );
    // The look, cheapest first: the presence mark free of others; the other digits' marks; pg_locks last.
    const look = group.indexOf('CASE WHEN CASE WHEN pg_try_advisory_lock((($6::bigint & -1024) | 1023))');
    expect(look).toBeGreaterThan(0);
    expect(group.indexOf('generate_series(0, 1) AS g(d), generate_series(0, 31) AS h(v)')).toBeGreaterThan(look);
    expect(group.indexOf('FROM pg_locks l WHERE y.m')).toBeGreaterThan(group.indexOf('generate_series(0, 1) AS g(d)'));
    // The release of a group's holder gives its marker back and tells the gate's holder.
    expect(shapes.unlockGroup('1', '3', 'ch', '5').text).toMatch(
      /^SELECT pg_advisory_unlock\(\$2::bigint\), pg_advisory_unlock_shared\(\$1::bigint\), (CASE WHEN true THEN pg_advisory_unlock_shared\(.*\) END, ){3}pg_notify\(\$3, ''\)$/,
    );
  });
});
