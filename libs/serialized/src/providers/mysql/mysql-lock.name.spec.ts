import { mysqlLockName } from './mysql-lock.name';

describe('mysqlLockName', () => {
  it('fits MySQL’s 64-character limit whatever the key, in lower-case hex after the tag', () => {
    for (const key of ['', 'a', 'x'.repeat(10_000), 'ü:😀:\u0000', 'UPPER']) {
      const name = mysqlLockName('serialized', key);
      expect(name.length).toBeLessThanOrEqual(64);
      expect(name).toMatch(/^nsz1:[0-9a-f]{56}$/);
    }
  });

  it('is stable, and tells keys, cases and namespaces apart (no concatenation collides)', () => {
    expect(mysqlLockName('p', 'k')).toBe(mysqlLockName('p', 'k'));
    const names = new Set([
      mysqlLockName('a:b', 'c'),
      mysqlLockName('a', 'b:c'),
      mysqlLockName('a', 'B:c'),
      mysqlLockName('ab', 'c'),
      mysqlLockName('a', 'bc'),
      mysqlLockName('', 'abc'),
    ]);
    expect(names.size).toBe(6);
  });
});
