import type { Lock } from 'nestjs-serialized';

/**
 * What a Redis lock key holds while `lock` holds it: "<owner token> <fencing token>"
 * (libs/serialized/src/providers/redis/protocol/lua/lock-value.lua).
 */
export function lockValueOf(lock: Lock): string {
  return lockValue((lock as unknown as { token: string }).token, lock.fencingToken);
}

/** The lock key's value for owner token `owner` and fencing token `fence`. */
export function lockValue(owner: string, fence: bigint | string): string {
  return `${owner} ${fence}`;
}

/**
 * The owner token in a lock key's value (`null`: no key). What a holder that got the
 * key by a local hand-off can count on finding: the value names its tenure's owner
 * token at once, its own fencing token only from its first renewal on.
 */
export function ownerIn(value: string | null): string | null {
  return value === null ? null : value.split(' ')[0];
}
