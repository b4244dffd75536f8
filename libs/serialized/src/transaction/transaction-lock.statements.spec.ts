import { lockTimeoutOf, transactionLockStatements } from './transaction-lock.statements';
import { transactionOptionProblem } from './transaction-options.interface';
import { loadTransactional } from './transactional.loader';
import { SerializedConfigError } from '../config/serialized-config.error';

describe('transaction mode statements', () => {
  it('bounds a wait by the server, never with 0 (no bound at all) and never past what lock_timeout takes', () => {
    expect(lockTimeoutOf(0)).toBe('1ms');
    expect(lockTimeoutOf(-5)).toBe('1ms');
    expect(lockTimeoutOf(249.2)).toBe('250ms');
    expect(lockTimeoutOf(Number.MAX_SAFE_INTEGER)).toBe('2147483647ms');
  });

  it('quotes the fencing sequence and refuses one that is not an identifier', () => {
    expect(transactionLockStatements('app.fence').lock).toContain(`nextval('"app"."fence"'::regclass)`);
    expect(() => transactionLockStatements('x; DROP TABLE y')).toThrow(/fencingSequence/);
  });
});

describe('transaction option', () => {
  it('accepts true, false and { connectionName }; names anything else', () => {
    for (const ok of [undefined, true, false, {}, { connectionName: 'billing' }]) expect(transactionOptionProblem(ok)).toBeUndefined();
    expect(transactionOptionProblem('yes')).toBe('transaction="yes" is invalid: accepts true, false or { connectionName: string }');
    expect(transactionOptionProblem({ connectionName: '' })).toBeDefined();
    expect(transactionOptionProblem({ name: 'x' })).toBeDefined();
  });

  it('reports a missing @nestjs-cls/transactional (or nestjs-cls) in the form of every missing peer', () => {
    const missing = (pkg: string) => () => {
      throw Object.assign(new Error(`Cannot find module '${pkg}'`), { code: 'MODULE_NOT_FOUND' });
    };
    for (const pkg of ['@nestjs-cls/transactional', 'nestjs-cls']) {
      const error = (() => {
        try {
          loadTransactional('transaction mode (X#y)', missing(pkg));
        } catch (e) {
          return e as SerializedConfigError;
        }
      })();
      expect(error).toBeInstanceOf(SerializedConfigError);
      expect(error!.problems).toEqual([
        `transaction mode (X#y) needs the optional peer dependency ${pkg}: npm install @nestjs-cls/transactional nestjs-cls`,
      ]);
    }
  });
});
