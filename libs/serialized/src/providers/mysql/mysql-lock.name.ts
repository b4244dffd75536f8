import crypto from 'node:crypto';

/** The tag every lock name starts with: named locks of other software never look like ours. */
const TAG = 'nsz1:';

/**
 * Maps a lock key to a MySQL / MariaDB named-lock name: `nsz1:` and the first 28
 * bytes (224 bits) of SHA-256 in lower-case hex, 61 characters, within the
 * server's 64-character limit whatever the key's length or characters. Hex keeps
 * the name the same under any collation (servers compare names without regard to
 * case on some versions).
 *
 * The namespace (the key prefix) is length-prefixed and the input tagged, as for
 * the PostgreSQL advisory keys (`advisory-key.hash.ts`): no (namespace, key) pair
 * produces the bytes of another. A collision never breaks exclusion; it only makes
 * two keys wait for each other, and at 224 bits it does not happen.
 */
export function mysqlLockName(namespace: string, key: string): string {
  const digest = crypto
    .createHash('sha256')
    .update(`nestjs-serialized/mysql/${namespace.length}:${namespace}/${key}`, 'utf8')
    .digest('hex');
  return TAG + digest.slice(0, 56);
}
