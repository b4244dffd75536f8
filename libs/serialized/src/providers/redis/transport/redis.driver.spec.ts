import { SerializedConfigError } from '../../../config/serialized-config.error';
import { loadIoredis } from './redis.driver';

describe('loadIoredis', () => {
  it('says what to install when ioredis is missing', () => {
    const missing = (): never => {
      const error = new Error("Cannot find module 'ioredis'") as NodeJS.ErrnoException;
      error.code = 'MODULE_NOT_FOUND';
      throw error;
    };
    expect(() => loadIoredis(missing)).toThrow(SerializedConfigError);
    expect(() => loadIoredis(missing)).toThrow("driver 'redis' needs the optional peer dependency ioredis: npm install ioredis");
  });

  it('passes other failures through', () => {
    const broken = (): never => {
      throw new TypeError('boom');
    };
    expect(() => loadIoredis(broken)).toThrow(TypeError);
  });

  it('loads the real module when it is installed', () => {
    expect(typeof loadIoredis().Redis).toBe('function');
  });
});
