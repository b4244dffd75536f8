import crypto from 'node:crypto';

/**
 * Maps a lock key to the 64-bit key of `pg_advisory_lock(bigint)`: the first
 * 8 bytes of SHA-256, read as a signed big-endian integer (PostgreSQL's `bigint`).
 *
 * 64 bits, not 32: with n keys in use the chance that two of them share an
 * advisory lock is about n² / 2^65 (2.7 % at 10^9 keys), where a 32-bit hash
 * already passes 50 % at 77 000 keys. A collision never breaks exclusion, it
 * only makes two keys wait for each other.
 *
 * The namespace is length-prefixed, so no (namespace, key) pair can produce the
 * bytes of another (`"a:b" + "c"` and `"a" + "b:c"` hash differently), and the
 * fixed tag keeps these keys apart from other software hashing plain strings.
 *
 * @returns the key as a decimal string, ready to be sent as a `bigint` parameter
 */
export function advisoryLockKey(namespace: string, key: string): string {
  return sha256(`nestjs-serialized/${namespace.length}:${namespace}/${key}`).readBigInt64BE(0).toString();
}

// The one-shot crypto.hash (Node 20.12+, 21.7+) is several times cheaper than a Hash object.
type OneShotHash = (algorithm: string, data: string, encoding: 'buffer') => Buffer;
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;
const sha256: (data: string) => Buffer = oneShot
  ? (data) => oneShot('sha256', data, 'buffer')
  : (data) => crypto.createHash('sha256').update(data, 'utf8').digest();
