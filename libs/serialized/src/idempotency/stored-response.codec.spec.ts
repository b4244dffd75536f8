import { decodeStoredResponse, encodeStoredResponse, type StoredResponse } from './stored-response.codec';

describe('stored responses', () => {
  it('round-trip through the text the Redis and PostgreSQL stores keep, bytes included', () => {
    const http: StoredResponse = {
      fingerprint: 'f',
      kind: 'http',
      status: 201,
      headers: { location: '/x', 'set-thing': ['a', 'b'] },
      body: Buffer.from([0, 255, 10]),
      storedAt: 5,
    };
    const values: StoredResponse = { fingerprint: undefined, kind: 'values', values: [{ a: 1 }, 'x'], storedAt: 6 };
    expect(decodeStoredResponse(encodeStoredResponse(http))).toEqual(http);
    expect(decodeStoredResponse(encodeStoredResponse(values))).toEqual(values);
  });

  it('refuses a record it did not write', () => {
    expect(() => decodeStoredResponse('{"v":2,"k":"http"}')).toThrow('an idempotency record in an unknown format');
  });
});
