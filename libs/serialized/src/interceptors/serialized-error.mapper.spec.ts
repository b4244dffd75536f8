import type { ExecutionContext } from '@nestjs/common';
import { HttpException } from '@nestjs/common';
import { LockBackendError, LockBusyError, LockLostError, LockTimeoutError, SerializationKeyError } from '../errors';
import { statusOf, toTransportError, UNAVAILABLE_MESSAGE } from './serialized-error.mapper';

describe('serialized error mapping', () => {
  it('maps each library error to its HTTP status', () => {
    expect(statusOf(new SerializationKeyError('id', 'missing', []))).toBe(400);
    expect(statusOf(new LockBusyError('k'))).toBe(429);
    expect(statusOf(new LockTimeoutError('k', 10))).toBe(429);
    expect(statusOf(new LockBackendError('down'))).toBe(503);
    expect(statusOf(new LockLostError('k', 'gone'))).toBe(503);
  });

  it('sets Retry-After on a 429 and keeps other errors untouched', () => {
    const headers: Record<string, string> = {};
    const ctx = {
      getType: () => 'http',
      switchToHttp: () => ({ getResponse: () => ({ header: (n: string, v: string) => (headers[n] = v) }) }),
    } as unknown as ExecutionContext;
    const mapped = toTransportError(new LockTimeoutError('k', 10, 'A#b'), ctx) as HttpException;
    expect(mapped.getStatus()).toBe(429);
    expect(mapped.getResponse()).toMatchObject({ code: 'LockTimeoutError', message: 'Timed out after 10 ms waiting for lock "k" (in A#b)' });
    expect(headers['Retry-After']).toBe('1');
    const other = new Error('handler failed');
    expect(toTransportError(other, ctx)).toBe(other);
  });

  it('answers 503 with Retry-After and a body that says only that the backend is unavailable', () => {
    const headers: Record<string, string> = {};
    const ctx = {
      getType: () => 'http',
      switchToHttp: () => ({ getResponse: () => ({ header: (n: string, v: string) => (headers[n] = v) }) }),
    } as unknown as ExecutionContext;
    for (const error of [
      new LockBackendError('Redis is unreachable: connect ECONNREFUSED 127.0.0.1:6399', { key: 'scope:42', handler: 'A#b' }),
      new LockLostError('scope:42', 'PostgreSQL session ended: role "nosuchrole" does not exist', undefined, 'A#b'),
    ]) {
      const mapped = toTransportError(error, ctx) as HttpException;
      expect(mapped.getStatus()).toBe(503);
      expect(mapped.getResponse()).toEqual({ statusCode: 503, error: 'Service Unavailable', code: error.name, message: UNAVAILABLE_MESSAGE });
      expect(headers['Retry-After']).toBe('1');
    }
  });
});
