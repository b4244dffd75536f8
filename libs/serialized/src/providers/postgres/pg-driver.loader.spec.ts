import { loadPgDriver, PG_MISSING_MESSAGE } from './pg-driver.loader';

describe('loadPgDriver', () => {
  it('loads pg when it is installed', () => {
    expect(typeof loadPgDriver().Client).toBe('function');
  });

  it('says what to install when pg is missing', () => {
    const missing = (): never => {
      throw Object.assign(new Error("Cannot find module 'pg'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadPgDriver(missing)).toThrow(PG_MISSING_MESSAGE);
    expect(PG_MISSING_MESSAGE).toBe("driver 'postgres' needs the optional peer dependency pg: npm install pg");
  });

  it('passes on other load failures unchanged', () => {
    const broken = (): never => {
      throw Object.assign(new Error("Cannot find module 'pg-types'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadPgDriver(broken)).toThrow("Cannot find module 'pg-types'");
  });

  it('is loaded when a provider is made, never when its module is imported', () => {
    jest.isolateModules(() => {
      jest.doMock('pg', () => {
        throw Object.assign(new Error("Cannot find module 'pg' from 'test'"), { code: 'MODULE_NOT_FOUND' });
      });
      try {
        // The entry point re-exports this module: importing it must work without pg.
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded inside jest.isolateModules, after the mock
        const { PostgresLockProvider } = require('./postgres-lock.provider') as typeof import('./postgres-lock.provider');
        expect(() => new PostgresLockProvider({})).toThrow(PG_MISSING_MESSAGE);
      } finally {
        jest.dontMock('pg');
      }
    });
  });
});
