import { LockBackendError, LockBusyError, LockLostError, LockTimeoutError, SerializationKeyError } from '../errors';
import { IdempotencyConflictError, IdempotencyKeyError, IdempotencyMismatchError } from '../idempotency/errors';
import { codeOf, mapSerializedError, statusOf, UNAVAILABLE_MESSAGE } from './serialized-error.mapper';

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

  it('gives each lock and key error its stable code', () => {
    expect(codeOf(new SerializationKeyError('id', 'missing', ['params.id']))).toBe('SERIALIZATION_KEY_MISSING');
    expect(codeOf(new SerializationKeyError('id', 'blank', ['params.id']))).toBe('SERIALIZATION_KEY_MISSING');
    for (const problem of ['not-scalar', 'too-long', 'unencodable'] as const) {
      expect(codeOf(new SerializationKeyError('id', problem, ['params.id']))).toBe('SERIALIZATION_KEY_INVALID');
    }
    expect(codeOf(new LockBusyError('k'))).toBe('LOCK_BUSY');
    expect(codeOf(new LockTimeoutError('k', 10))).toBe('LOCK_TIMEOUT');
    expect(codeOf(new LockBackendError('down'))).toBe('LOCK_BACKEND_UNAVAILABLE');
    expect(codeOf(new LockLostError('k', 'gone'))).toBe('LOCK_LOST');
    expect(codeOf(new IdempotencyConflictError('k'))).toBeUndefined();
  });

  it('gives a 429 its Retry-After, GraphQL code and a body with the code, naming no lock key or handler', () => {
    const mapped = mapSerializedError(new LockTimeoutError('Orders.place:user-42', 10, 'OrdersController#place'));
    expect(mapped).toMatchObject({
      status: 429,
      retryAfterSeconds: 1,
      graphqlCode: 'TOO_MANY_REQUESTS',
      code: 'LOCK_TIMEOUT',
      contentType: undefined,
    });
    expect(mapped.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'LOCK_TIMEOUT',
      message: 'Timed out after 10 ms waiting for another request with the same key to finish; retry later',
    });
    for (const reason of ['held', 'max-pending', 'max-pending-total', 'shutting-down'] as const) {
      const busy = JSON.stringify(
        mapSerializedError(new LockBusyError('Orders.place:user-42', reason, { maxPending: 3, handler: 'OrdersController#place' })).body,
      );
      expect(busy).toContain('"code":"LOCK_BUSY"');
      expect(busy).not.toMatch(/user-42|Orders|place/);
    }
  });

  it('names a key as written and where it looked, never its value, a function name or a lock key given to run()', () => {
    const named = mapSerializedError(new SerializationKeyError('user.id', 'too-long', ['user.id'], 'MeController#export'));
    expect(named.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'SERIALIZATION_KEY_INVALID',
      message: 'Serialization key "user.id" is longer than 512 characters (looked in user.id)',
    });
    const fromFunction = mapSerializedError(
      new SerializationKeyError('function tenantOf', 'missing', ['the value returned by the key function'], 'A#b'),
    );
    expect(fromFunction.message).toBe('The key function returned nothing');
    const givenToRun = mapSerializedError(new SerializationKeyError('wallet:\ud800', 'unencodable', [], 'LockService#run'));
    expect(givenToRun).toMatchObject({
      code: 'SERIALIZATION_KEY_INVALID',
      message: 'The lock key is not well-formed Unicode (it has a lone surrogate)',
    });
    expect(mapSerializedError(new SerializationKeyError('id', 'blank', ['params.id'])).message).toBe(
      'Serialization key "id" is only white space (looked in params.id)',
    );
  });

  it('answers 503 with Retry-After and a body that says only that the backend is unavailable, or that the lock was lost', () => {
    const down = mapSerializedError(
      new LockBackendError('Redis is unreachable: connect ECONNREFUSED 127.0.0.1:6399', { key: 'scope:42', handler: 'A#b' }),
    );
    expect(down).toMatchObject({ status: 503, retryAfterSeconds: 1, graphqlCode: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE_MESSAGE });
    expect(down.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'LOCK_BACKEND_UNAVAILABLE',
      message: UNAVAILABLE_MESSAGE,
    });
    const lost = mapSerializedError(
      new LockLostError('scope:42', 'PostgreSQL session ended: role "nosuchrole" does not exist', undefined, 'A#b'),
    );
    expect(lost).toMatchObject({ status: 503, retryAfterSeconds: 1, graphqlCode: 'SERVICE_UNAVAILABLE' });
    expect(lost.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'LOCK_LOST',
      message: 'The lock of this request was lost before it finished; retry later',
    });
  });

  it("keeps @Idempotent's problem details (and their content type) unless the hook replaces them", () => {
    const conflict = mapSerializedError(new IdempotencyConflictError('k'));
    expect(conflict).toMatchObject({
      status: 409,
      retryAfterSeconds: 1,
      graphqlCode: 'CONFLICT',
      contentType: 'application/problem+json; charset=utf-8',
    });
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
    expect(seen).toEqual(['LockBusyError', 429, expect.objectContaining({ code: 'LOCK_BUSY', statusCode: 429 })]);
    expect(mapped.body).toMatchObject({ code: 'LOCK_BUSY', retry: true });
  });
});
