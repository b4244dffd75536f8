import { LockBackendError, LockBusyError, LockLostError, LockTimeoutError, SerializationKeyError } from '../errors';
import { IdempotencyConflictError, IdempotencyKeyError, IdempotencyMismatchError } from '../idempotency/errors';
import { mapSerializedError, statusOf, UNAVAILABLE_MESSAGE } from './serialized-error.mapper';

describe('serialized error mapping', () => {
  it('maps each library error to its HTTP status', () => {
    expect(statusOf(new SerializationKeyError('id', 'missing', []))).toBe(400);
    expect(statusOf(new LockBusyError('k'))).toBe(429);
    expect(statusOf(new LockTimeoutError('k', 10))).toBe(429);
    expect(statusOf(new LockBackendError('down'))).toBe(503);
    expect(statusOf(new LockLostError('k', 'gone'))).toBe(503);
    expect(statusOf(new IdempotencyKeyError('h', 'missing', 'missing'))).toBe(400);
    expect(statusOf(new IdempotencyConflictError('k'))).toBe(409);
    expect(statusOf(new IdempotencyMismatchError('k'))).toBe(422);
  });

  it('gives a 429 its Retry-After, GraphQL code and a body naming the error', () => {
    const mapped = mapSerializedError(new LockTimeoutError('k', 10, 'A#b'));
    expect(mapped).toMatchObject({ status: 429, retryAfterSeconds: 1, graphqlCode: 'TOO_MANY_REQUESTS', contentType: undefined });
    expect(mapped.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'LockTimeoutError',
      message: 'Timed out after 10 ms waiting for lock "k" (in A#b)',
    });
    expect(mapSerializedError(new SerializationKeyError('id', 'missing', []))).toMatchObject({ status: 400, retryAfterSeconds: undefined, graphqlCode: 'BAD_REQUEST' });
  });

  it('answers 503 with Retry-After and a body that says only that the backend is unavailable', () => {
    for (const error of [
      new LockBackendError('Redis is unreachable: connect ECONNREFUSED 127.0.0.1:6399', { key: 'scope:42', handler: 'A#b' }),
      new LockLostError('scope:42', 'PostgreSQL session ended: role "nosuchrole" does not exist', undefined, 'A#b'),
    ]) {
      const mapped = mapSerializedError(error);
      expect(mapped).toMatchObject({ status: 503, retryAfterSeconds: 1, graphqlCode: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE_MESSAGE });
      expect(mapped.body).toEqual({ statusCode: 503, error: 'Service Unavailable', code: error.name, message: UNAVAILABLE_MESSAGE });
    }
  });

  it("keeps @Idempotent's problem details (and their content type) unless the hook replaces them", () => {
    const conflict = mapSerializedError(new IdempotencyConflictError('k'));
    expect(conflict).toMatchObject({ status: 409, retryAfterSeconds: 1, graphqlCode: 'CONFLICT', contentType: 'application/problem+json; charset=utf-8' });
    expect(conflict.body).toMatchObject({ status: 409, type: 'urn:nestjs-serialized:problem:idempotency-request-in-progress' });
    const replaced = mapSerializedError(new IdempotencyMismatchError('k'), { body: (error, status) => ({ failure: error.name, status }) });
    expect(replaced).toMatchObject({ status: 422, contentType: undefined, body: { failure: 'IdempotencyMismatchError', status: 422 } });
  });

  it('hands the hook the error, the status and the default body', () => {
    const seen: unknown[] = [];
    const mapped = mapSerializedError(new LockBusyError('k'), {
      body: (error, status, defaultBody) => {
        seen.push(error.name, status, defaultBody);
        return { ...defaultBody, retry: true };
      },
    });
    expect(seen).toEqual(['LockBusyError', 429, expect.objectContaining({ code: 'LockBusyError', statusCode: 429 })]);
    expect(mapped.body).toMatchObject({ code: 'LockBusyError', retry: true });
  });
});
