import { createHash } from 'node:crypto';
import { advisoryLockKey } from './advisory-key.hash';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

describe('advisoryLockKey', () => {
  it('is the first 8 bytes of SHA-256 over the namespaced key, as a signed 64-bit integer', () => {
    // Same value as SQL: ('x' || left(encode(sha256(convert_to('nestjs-serialized/10:serialized/user-1','UTF8')),'hex'),16))::bit(64)::bigint
    expect(advisoryLockKey('serialized', 'user-1')).toBe('-6069648690048863131');
    const digest = createHash('sha256').update('nestjs-serialized/10:serialized/Rewards.claim:42').digest();
    expect(advisoryLockKey('serialized', 'Rewards.claim:42')).toBe(digest.readBigInt64BE(0).toString());
  });

  it('is deterministic and stays within bigint range', () => {
    for (let i = 0; i < 1000; i++) {
      const key = BigInt(advisoryLockKey('p', `key-${i}`));
      expect(key >= INT64_MIN && key <= INT64_MAX).toBe(true);
      expect(advisoryLockKey('p', `key-${i}`)).toBe(key.toString());
    }
  });

  it('separates namespaces, including splits of the same characters', () => {
    expect(advisoryLockKey('a', 'k')).not.toBe(advisoryLockKey('b', 'k'));
    expect(advisoryLockKey('a:b', 'c')).not.toBe(advisoryLockKey('a', 'b:c'));
    expect(advisoryLockKey('a/1:b', 'c')).not.toBe(advisoryLockKey('a', '1:b/c'));
  });

  it('uses all 64 bits: no collisions among 200 000 keys, and both halves vary', () => {
    const seen = new Set<string>();
    const high = new Set<bigint>();
    for (let i = 0; i < 200_000; i++) {
      const key = advisoryLockKey('serialized', `Orders.create:user-${i}`);
      seen.add(key);
      if (i < 1000) high.add(BigInt.asUintN(64, BigInt(key)) >> 32n);
    }
    // A 32-bit hash would collide here with probability ~99 %; 64 bits with ~1e-9.
    expect(seen.size).toBe(200_000);
    expect(high.size).toBeGreaterThan(990);
  });

  it('hashes non-ASCII keys by their UTF-8 bytes', () => {
    expect(advisoryLockKey('p', 'café')).not.toBe(advisoryLockKey('p', 'cafe'));
    expect(advisoryLockKey('p', '用户')).toBe(advisoryLockKey('p', '用户'));
  });
});
