import type { ExecutionContext } from '@nestjs/common';
import { SerializationKeyError } from '../errors';
import { resolveArgumentsKey, resolveArgumentsKeys } from './arguments-key.resolver';
import { contextKeyResolver, resolveContextKey } from './context-key.resolver';
import { parseSerializationKey, parseSerializedKey } from './serialization-key.parser';

const http = (request: object): ExecutionContext =>
  ({ getType: () => 'http', switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;
const key = (k: Parameters<typeof parseSerializationKey>[0]) => parseSerializationKey(k, 'Test#handler');

describe('key resolution', () => {
  it('looks a bare name up in params, user, body, query — in that order', async () => {
    const all = { params: { id: 'p' }, user: { id: 'u' }, body: { id: 'b' }, query: { id: 'q' } };
    await expect(resolveContextKey(key('id'), http(all), 'T#h')).resolves.toBe('p');
    await expect(resolveContextKey(key('id'), http({ ...all, params: {} }), 'T#h')).resolves.toBe('u');
    await expect(resolveContextKey(key('id'), http({ body: { id: 'b' }, query: { id: 'q' } }), 'T#h')).resolves.toBe('b');
    await expect(resolveContextKey(key('id'), http({ query: { id: 7 } }), 'T#h')).resolves.toBe('7');
  });

  it('reads explicit sources, including headers case-insensitively', async () => {
    const request = { user: { org: { id: 9 } }, headers: { 'idempotency-key': 'abc' } };
    await expect(resolveContextKey(key('user.org.id'), http(request), 'T#h')).resolves.toBe('9');
    await expect(resolveContextKey(key('headers.Idempotency-Key'), http(request), 'T#h')).resolves.toBe('abc');
  });

  it('throws a 400-class error naming the key, where it looked and the handler', async () => {
    const error = await resolveContextKey(key('user.id'), http({}), 'Rewards#claim').catch((e) => e);
    expect(error).toBeInstanceOf(SerializationKeyError);
    expect(error.message).toBe('Serialization key "user.id" is missing or empty (looked in req.user.id) (in Rewards#claim)');
  });

  it('does not read what every object inherits', async () => {
    await expect(resolveContextKey(key('body.constructor'), http({ body: {} }), 'T#h')).rejects.toBeInstanceOf(SerializationKeyError);
    await expect(resolveContextKey(key('toString'), http({ params: {} }), 'T#h')).rejects.toBeInstanceOf(SerializationKeyError);
  });

  it('treats a path naming no request source as a programming error', async () => {
    await expect(resolveContextKey(key('data.userId'), http({}), 'T#h')).rejects.toThrow(TypeError);
  });

  it('reads a method key from the first argument, argument N, or a function of the arguments', async () => {
    const job = { data: { userId: 'u1' } };
    await expect(resolveArgumentsKey(key('data.userId'), [job], 'T#h')).resolves.toBe('u1');
    await expect(resolveArgumentsKey(key('1.userId'), ['x', { userId: 'u2' }], 'T#h')).resolves.toBe('u2');
    await expect(resolveArgumentsKey(key('0'), ['u3'], 'T#h')).resolves.toBe('u3');
    await expect(
      resolveArgumentsKey(
        key((a: string, b: number) => `${a}-${b}`),
        ['x', 4],
        'T#h',
      ),
    ).resolves.toBe('x-4');
    const missing = await resolveArgumentsKey(
      key(() => null),
      [],
      'Jobs#process',
    ).catch((e) => e);
    expect(missing.message).toContain('Jobs#process');
  });

  it('canonicalizes with transform, on a route handler and on a method alike, and checks what it returns', async () => {
    const byNumber = parseSerializationKey('userId', 'T#h', Number);
    await expect(resolveContextKey(byNumber, http({ params: { userId: '0042' } }), 'T#h')).resolves.toBe('42');
    await expect(
      resolveArgumentsKey(parseSerializationKey('data.userId', 'T#h', Number), [{ data: { userId: '042' } }], 'T#h'),
    ).resolves.toBe('42');
    const lower = parseSerializationKey('body.email', 'T#h', async (v) => v.toLowerCase());
    await expect(resolveContextKey(lower, http({ body: { email: 'A@B.example' } }), 'T#h')).resolves.toBe('a@b.example');
    const nan = await resolveContextKey(byNumber, http({ params: { userId: 'x' } }), 'T#h').catch((e) => e);
    expect(nan).toBeInstanceOf(SerializationKeyError);
    expect(nan.message).toBe('Serialization key "userId" must be a string or a number (looked in transform(params.userId)) (in T#h)');
  });

  it('refuses values of only white space and values with a lone surrogate', async () => {
    for (const [value, problem] of [
      [' \t', 'blank'],
      ['\ud800', 'unencodable'],
      ['x\udc00', 'unencodable'],
    ] as const) {
      const error = await resolveContextKey(key('body.id'), http({ body: { id: value } }), 'T#h').catch((e) => e);
      expect(error).toBeInstanceOf(SerializationKeyError);
      expect(error.problem).toBe(problem);
    }
    await expect(resolveContextKey(key('body.id'), http({ body: { id: '\ufffd' } }), 'T#h')).resolves.toBe('\ufffd');
  });

  it('refuses malformed keys when the decorator is applied', () => {
    expect(() => key('')).toThrow(TypeError);
    expect(() => key('a..b')).toThrow('empty path segment');
  });
});

describe('key sets', () => {
  const set = (k: Parameters<typeof parseSerializedKey>[0]) => parseSerializedKey(k, 'Test#handler');

  it('reads each member of an array key, in order, duplicates collapsed', async () => {
    const request = { params: { fromId: 'a', toId: 'b' } };
    await expect(contextKeyResolver(set(['params.fromId', 'params.toId']), 'T#h')(http(request))).toEqual(['a', 'b']);
    await expect(contextKeyResolver(set(['params.toId', 'params.fromId', 'params.toId']), 'T#h')(http(request))).toEqual(['b', 'a']);
    await expect(resolveArgumentsKeys(set(['0', '1.id']), ['x', { id: 7 }], 'T#h')).resolves.toEqual(['x', '7']);
  });

  it('takes an array from a key function as a set, and checks each value', async () => {
    await expect(
      contextKeyResolver(
        set(() => ['b', 'a', 'b']),
        'T#h',
      )(http({})),
    ).toEqual(['b', 'a']);
    await expect(
      contextKeyResolver(
        set(async () => [1, 2]),
        'T#h',
      )(http({})),
    ).resolves.toEqual(['1', '2']);
    await expect(
      resolveArgumentsKeys(
        set((a: string, b: string) => [a, b]),
        ['p', 'q'],
        'T#h',
      ),
    ).resolves.toEqual(['p', 'q']);
    expect(() =>
      contextKeyResolver(
        set(() => []),
        'T#h',
      )(http({})),
    ).toThrow(expect.objectContaining({ problem: 'missing' }));
    expect(() =>
      contextKeyResolver(
        set(() => ['a', ' ']),
        'T#h',
      )(http({})),
    ).toThrow(expect.objectContaining({ problem: 'blank' }));
    const many = Array.from({ length: 17 }, (_, i) => `v${i}`);
    expect(() =>
      contextKeyResolver(
        set(() => many),
        'T#h',
      )(http({})),
    ).toThrow(expect.objectContaining({ problem: 'too-many' }));
    expect(
      contextKeyResolver(
        set(() => [...many.slice(0, 16), 'v0']),
        'T#h',
      )(http({})),
    ).toHaveLength(16);
  });

  it('a missing member is a 400 naming it', () => {
    const error = (() => {
      try {
        contextKeyResolver(set(['params.fromId', 'query.toId']), 'T#h')(http({ params: { fromId: 'a' }, query: {} }));
      } catch (e) {
        return e as SerializationKeyError;
      }
    })();
    expect(error).toBeInstanceOf(SerializationKeyError);
    expect(error?.problem).toBe('missing');
    expect(error?.key).toBe('query.toId');
  });

  it('keeps one-key readers one-key: an array from an @Idempotent key function is not a value', async () => {
    await expect(
      resolveContextKey(
        key(() => ['a'] as never),
        http({}),
        'T#h',
      ),
    ).rejects.toMatchObject({ problem: 'not-scalar' });
    await expect(
      resolveArgumentsKey(
        key(() => ['a'] as never),
        [],
        'T#h',
      ),
    ).rejects.toMatchObject({ problem: 'not-scalar' });
  });

  it('refuses an empty array key, or one of more than 16 keys, when the decorator is applied', () => {
    expect(() => set([])).toThrow(TypeError);
    expect(() => set(Array.from({ length: 17 }, (_, i) => `body.k${i}`))).toThrow('at most 16');
    expect(set(Array.from({ length: 16 }, (_, i) => `body.k${i}`)).kind).toBe('set');
  });
});
