/** Number of hash slots of a Redis Cluster. */
export const REDIS_CLUSTER_SLOTS = 16384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** CRC16-XMODEM of the UTF-8 bytes of `text`: what Redis Cluster hashes keys with. */
export function crc16(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ bytes[i]) & 0xff];
  return crc;
}

/** The Cluster slot of a key whose hash tag is `tag` (the text between its first `{` and the next `}`). */
export function slotOfTag(tag: string): number {
  return crc16(tag) % REDIS_CLUSTER_SLOTS;
}

/**
 * For every Cluster slot, a short hash tag that maps to it. The fencing counter of a
 * lock must sit in the lock's slot (a script may only touch keys of one slot), and a
 * counter per lock key would either grow without bound or expire and restart; one
 * counter per slot, reached through these tags, is bounded (16384 per prefix) and
 * never restarts. Built once, when a Cluster provider first needs it.
 */
export class SlotTags {
  private table: string[] | undefined;

  /** A tag whose slot is `slot`. */
  tagFor(slot: number): string {
    const table = (this.table ??= SlotTags.build());
    return table[slot];
  }

  private static build(): string[] {
    const table = new Array<string>(REDIS_CLUSTER_SLOTS);
    let missing = REDIS_CLUSTER_SLOTS;
    for (let i = 0; missing > 0; i++) {
      const tag = i.toString(36);
      const slot = slotOfTag(tag);
      if (table[slot] === undefined) {
        table[slot] = tag;
        missing--;
      }
    }
    return table;
  }
}
