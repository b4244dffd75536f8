import { crc16, REDIS_CLUSTER_SLOTS, slotOfTag, SlotTags } from './redis-key.slot';

describe('Redis Cluster key slots', () => {
  it('computes CRC16-XMODEM as Redis does', () => {
    expect(crc16('123456789')).toBe(0x31c3); // the reference check value
    // Slots as reported by CLUSTER KEYSLOT on a real node.
    expect(slotOfTag('foo')).toBe(12182);
    expect(slotOfTag('bar')).toBe(5061);
    expect(slotOfTag('user1000')).toBe(3443); // {user1000}.following
    expect(slotOfTag('Orders.create:42')).toBe(10985); // serialized:{Orders.create:42}:q
    expect(slotOfTag('ключ')).toBe(10303); // UTF-8 bytes, not UTF-16 code units
  });

  it('finds a tag for every slot, and each tag lands in its slot', () => {
    const tags = new SlotTags();
    const seen = new Set<string>();
    for (const slot of [0, 1, 42, 8191, 12182, REDIS_CLUSTER_SLOTS - 1]) {
      const tag = tags.tagFor(slot);
      expect(slotOfTag(tag)).toBe(slot);
      expect(tag).not.toMatch(/[{}]/);
      seen.add(tag);
    }
    expect(seen.size).toBe(6);
    for (let slot = 0; slot < REDIS_CLUSTER_SLOTS; slot += 97) expect(slotOfTag(tags.tagFor(slot))).toBe(slot);
  });
});
