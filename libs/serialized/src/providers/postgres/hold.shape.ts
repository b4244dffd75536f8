import { advisoryLockKey, gateKeyOf } from './advisory-key.hash';

/**
 * What a caller that holds a key beside others asks for, and the advisory keys it
 * uses: a reader (`shared`), or a place in a group of up to `limit` (`concurrency`).
 * Both queue at the key's gate when they wait, and both hold their shape's marker
 * (docs/providers/postgres.md, "Several holders of one key").
 */
export interface HoldShape {
  readonly shared: boolean;
  /** A group's limit (`concurrency`); 0 for a reader. */
  readonly limit: number;
  /** The key's gate (decimal advisory key): the waiters of every shape and process queue there. */
  readonly gateKey: string;
  /** The first slot's advisory key (slot i is `slotBase # i`, i < `limit`). */
  readonly slotBase: string;
  /** The NOTIFY channel a group's release is told on. */
  readonly channel: string;
  /** The shape's mark id (`markerKeyOf`): what the statements derive its marks from. */
  readonly markerKey: string;
  /** The marks a holder of this shape holds shared besides the key (`markKeysOf`), derived once here. */
  readonly marks: readonly string[];
}

/**
 * A key's shape marks are advisory keys in one block of 1,024, beside the slots
 * (`slotBase # i`, i < 1000: the block differs from them in bit 10). A shape (0 for
 * readers, N for a group of N ≤ 1000) is written in base 32 as two digits, and a holder
 * holds one mark per digit, `block | d·32 + v` (d = 0, 1; v < 32), shared. Another
 * shape differs from it in one digit at least, so it holds a mark this holder does not:
 * a statement learns whether one is inside by trying the 62 marks of the other digit
 * values, not by reading pg_locks. The block's last key (`| 1023`) is the key's
 * *presence* mark: every shaped holder holds it too, so a statement that finds no other
 * session on it knows nobody else is inside (ShapeStatements' shape check).
 *
 * `markerKey` is `block | shape`: not a lock itself, the one number the statements and
 * `markKeysOf` derive the block and the marks from.
 */
const MARKER_BLOCK = 1024n;
const DIGIT = 32n;

/** The mark id of shape `shape` (0: readers; N: a group of N) of the key whose first slot is `slotBase`. */
export function markerKeyOf(slotBase: string, shape: number): string {
  const block = (BigInt(slotBase) ^ MARKER_BLOCK) & ~(MARKER_BLOCK - 1n);
  return (block | BigInt(shape)).toString();
}

/** What a shaped holder holds besides the key (and a slot): its shape's two digit marks and the key's presence mark. */
export function markKeysOf(markerKey: string): [string, string, string] {
  const id = BigInt(markerKey);
  const block = id & ~(MARKER_BLOCK - 1n);
  const shape = id & (MARKER_BLOCK - 1n);
  return [(block | (shape % DIGIT)).toString(), (block | (DIGIT + shape / DIGIT)).toString(), (block | (MARKER_BLOCK - 1n)).toString()];
}

/**
 * The advisory keys of `key`'s shape (`lockKey` its advisory key). The slots and
 * markers are advisory keys of their own namespace (the key's prefix with a suffix no
 * prefix has); the gate is `lockKey` masked (`gateKeyOf`), which every try's
 * statement computes from the key alone. Callers of one key with different limits
 * share the gate and the first slots, and hold different markers.
 */
export function holdShapeOf(keyPrefix: string, key: string, lockKey: string, shared: boolean, limit: number): HoldShape {
  const slotBase = advisoryLockKey(`${keyPrefix}\u0000slots`, key);
  const gateKey = gateKeyOf(lockKey);
  const channel = `nestjs_serialized_${BigInt.asUintN(64, BigInt(gateKey)).toString(16)}`;
  const groupLimit = shared ? 0 : limit;
  const markerKey = markerKeyOf(slotBase, groupLimit);
  return { shared, limit: groupLimit, gateKey, slotBase, channel, markerKey, marks: markKeysOf(markerKey) };
}
