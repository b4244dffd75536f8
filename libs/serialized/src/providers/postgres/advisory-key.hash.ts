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

/**
 * The gate of a key's group (`concurrency` > 1): its waiters of every process queue
 * there, and a try of every shape looks at it for the length of its statement, so
 * no try passes a group waiter granted the gate that has not asked for the key yet
 * (models/postgres-holders.pml, P8). Derived from the key's advisory key by this
 * mask, so a statement computes it from the key it was sent (`$1::bigint # mask`)
 * and a plain try needs no second hash.
 */
export const GATE_MASK = 0x2545f4914f6cdd1dn;

/** The gate's advisory key for the key whose advisory key is `lockKey` (decimal), as SQL's `lockKey # GATE_MASK` gives it. */
export function gateKeyOf(lockKey: string): string {
  return BigInt.asIntN(64, BigInt(lockKey) ^ GATE_MASK).toString();
}
