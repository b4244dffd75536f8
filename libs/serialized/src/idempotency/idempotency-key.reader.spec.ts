import type { ExecutionContext } from '@nestjs/common';
import { parseSerializationKey } from '../key/serialization-key.parser';
import { IdempotencyKeyError } from './errors';
import { parseSfString, readIdempotentCall } from './idempotency-key.reader';
import type { IdempotentMetadata, IdempotentOptions } from './idempotent-options.interface';

const http = (request: object): ExecutionContext =>
  ({
    getType: () => 'http',
    switchToHttp: () => ({ getRequest: () => ({ method: 'POST', url: '/p', ...request }) }),
  }) as unknown as ExecutionContext;

function metadata(options: IdempotentOptions = {}): IdempotentMetadata {
  return {
    options,
    key: parseSerializationKey(options.key ?? 'headers.idempotency-key', 'Pay#create'),
    scope: options.scope === undefined ? undefined : parseSerializationKey(options.scope, 'Pay#create'),
    defaultKey: options.key === undefined,
    route: 'Pay.create',
    handler: 'Pay#create',
    storedHeaders: [],
  };
}

describe('reading an idempotency key', () => {
  it("parses the draft's Structured Field string and refuses malformed ones", () => {
    expect(parseSfString('"abc-1"')).toBe('abc-1');
    expect(parseSfString('"a\\"b\\\\c"')).toBe('a"b\\c');
    for (const bad of ['"abc', '"a"b"', '"a\\nb"', '"é"', '"']) expect(parseSfString(bad)).toBeUndefined();
  });

  it('keys a call by handler, scope value and key, and the bare and quoted forms alike', async () => {
    const bare = await readIdempotentCall(metadata(), { ctx: http({ headers: { 'idempotency-key': 'k1' } }) });
    const quoted = await readIdempotentCall(metadata(), { ctx: http({ headers: { 'idempotency-key': '"k1"' } }) });
    expect(bare?.key).toMatch(/^idempotent:Pay\.create:[A-Za-z0-9_-]{43}$/);
    expect(quoted).toEqual(bare);
    const scoped = (user: string) =>
      readIdempotentCall(metadata({ scope: 'user.id' }), { ctx: http({ user: { id: user }, headers: { 'idempotency-key': 'k1' } }) });
    expect((await scoped('alice'))!.key).not.toBe((await scoped('bob'))!.key);
  });

  it('runs without idempotency when the key is absent and optional; 400-class errors otherwise', async () => {
    await expect(readIdempotentCall(metadata(), { ctx: http({ headers: {} }) })).resolves.toBeUndefined();
    const problem = (options: IdempotentOptions, headers: object) =>
      readIdempotentCall(metadata(options), { ctx: http({ headers, body: {} }) }).then(
        () => 'none',
        (e: IdempotencyKeyError) => `${e.name}:${e.problem}`,
      );
    expect(await problem({ required: true }, {})).toBe('IdempotencyKeyError:missing');
    expect(await problem({}, { 'idempotency-key': '  ' })).toBe('IdempotencyKeyError:empty');
    expect(await problem({}, { 'idempotency-key': 'k'.repeat(513) })).toBe('IdempotencyKeyError:too-long');
    expect(await problem({}, { 'idempotency-key': '"open' })).toBe('IdempotencyKeyError:invalid');
    expect(await problem({ key: 'body.requestId', required: true }, {})).toBe('IdempotencyKeyError:missing');
    expect(await problem({ key: 'body.requestId' }, {})).toBe('none');
  });

  it('asks for a key on a method that has no Idempotency-Key header', async () => {
    await expect(readIdempotentCall(metadata(), { args: [{ data: {} }], isJob: true })).rejects.toThrow(
      "give the key elsewhere ({ key: 'data.paymentId' })",
    );
  });

  it('leaves the fingerprint out with fingerprint: false and hashes a custom one', async () => {
    const ctx = http({ headers: { 'idempotency-key': 'k' } });
    expect((await readIdempotentCall(metadata({ fingerprint: false }), { ctx }))?.fingerprint).toBeUndefined();
    const custom = await readIdempotentCall(metadata({ fingerprint: () => 'same' }), { ctx });
    expect(custom?.fingerprint).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
