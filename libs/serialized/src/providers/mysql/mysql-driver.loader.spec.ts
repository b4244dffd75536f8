import { loadMysqlDriver } from './mysql-driver.loader';

const MESSAGE = "driver 'mysql' needs the optional peer dependency mysql2: npm install mysql2";

describe('loadMysqlDriver', () => {
  it('loads mysql2 when it is installed', () => {
    expect(typeof loadMysqlDriver().createConnection).toBe('function');
  });

  it('says what to install when mysql2 is missing', () => {
    const missing = (): never => {
      throw Object.assign(new Error("Cannot find module 'mysql2'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadMysqlDriver(missing)).toThrow(MESSAGE);
  });

  it('passes on other load failures unchanged', () => {
    const broken = (): never => {
      throw Object.assign(new Error("Cannot find module 'lru.min'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadMysqlDriver(broken)).toThrow("Cannot find module 'lru.min'");
  });

  it('is loaded when a provider is made, never when its module is imported', () => {
    jest.isolateModules(() => {
      jest.doMock('mysql2', () => {
        throw Object.assign(new Error("Cannot find module 'mysql2' from 'test'"), { code: 'MODULE_NOT_FOUND' });
      });
      try {
        // The entry point re-exports this module: importing it must work without mysql2.
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded inside jest.isolateModules, after the mock
        const { MysqlLockProvider } = require('./mysql-lock.provider') as typeof import('./mysql-lock.provider');
        expect(() => new MysqlLockProvider({})).toThrow(MESSAGE);
      } finally {
        jest.dontMock('mysql2');
      }
    });
  });
});
