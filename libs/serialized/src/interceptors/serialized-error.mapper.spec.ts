import type { ExecutionContext } from '@nestjs/common';
import { HttpException } from '@nestjs/common';
import { LockBackendError, LockBusyError, LockLostError, LockTimeoutError, SerializationKeyError } from '../errors';
import { statusOf, toTransportError } from './serialized-error.mapper';

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
});
