import type { ExecutionContext } from '@nestjs/common';
import { canonicalJson, contextFingerprint } from './request.fingerprint';

const http = (request: object): ExecutionContext =>
  ({ getType: () => 'http', switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;

describe('request fingerprints', () => {
  it('writes JSON with sorted keys, bytes as base64, and survives cycles', () => {
    expect(canonicalJson({ b: 2, a: [1, { d: undefined, c: 'x' }] })).toBe('{"a":[1,{"c":"x"}],"b":2}');
    expect(canonicalJson(Buffer.from('hi'))).toBe('{"$bytes":"aGk="}');
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(canonicalJson(cyclic)).toBe('{"a":1,"self":"[cycle]"}');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('is the same for one request re-serialized with its keys in another order', () => {
    const a = contextFingerprint(http({ method: 'POST', originalUrl: '/p?x=1', body: { amount: 1, currency: 'EUR' } }));
    const b = contextFingerprint(http({ method: 'POST', originalUrl: '/p?x=1', body: { currency: 'EUR', amount: 1 } }));
    expect(a).toBe(b);
  });

  it('differs when the method, the URL or the body differs', () => {
    const base = { method: 'POST', url: '/p', body: { amount: 1 } };
    const prints = [
      base,
      { ...base, method: 'PUT' },
      { ...base, url: '/q' },
      { ...base, body: { amount: 2 } },
      { ...base, body: '{"amount":1}' },
    ].map((r) => contextFingerprint(http(r)));
    expect(new Set(prints).size).toBe(prints.length);
  });
});
