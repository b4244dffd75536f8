import { slotOfTag } from './redis-key.slot';
import { escapeKeyPart, RedisKeyspace } from './redis.keyspace';

/** The hash tag Redis Cluster would use for `key` (or the whole key without one). */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

describe('RedisKeyspace', () => {
  it('names the keys of a lock under the prefix, sharing the hash tag {<key>}', () => {
    const keys = new RedisKeyspace('serialized', false).keysOf('Orders.create:42');
    expect(keys).toEqual({
      lock: 'serialized:{Orders.create:42}',
      queue: 'serialized:{Orders.create:42}:q',
      heartbeats: 'serialized:{Orders.create:42}:hb',
      holders: 'serialized:{Orders.create:42}:h',
      shapes: 'serialized:{Orders.create:42}:s',
      fence: 'serialized:fence',
    });
  });

  it('escapes braces and percent signs one-to-one, so odd keys neither move the tag nor collide', () => {
    expect(escapeKeyPart('plain:key')).toBe('plain:key');
    expect(escapeKeyPart('a{b}c')).toBe('a%7Bb%7Dc');
    expect(escapeKeyPart('%7B')).toBe('%257B');
    const space = new RedisKeyspace('p', true);
    const odd = ['a{b}c', '}{', '{}', '%7B', '{', 'x}'];
    const locks = odd.map((key) => space.keysOf(key).lock);
    expect(new Set(locks).size).toBe(odd.length);
    for (const key of odd) {
      const names = space.keysOf(key);
      const slots = new Set(
        [names.lock, names.queue, names.heartbeats, names.holders, names.shapes, names.fence].map((k) => slotOfTag(hashTagOf(k))),
      );
      expect(slots.size).toBe(1);
    }
  });

  it("uses one fencing counter per prefix standalone, and one per slot (in the lock's slot) in Cluster", () => {
    const standalone = new RedisKeyspace('p', false);
    expect(standalone.keysOf('a').fence).toBe(standalone.keysOf('b').fence);
    const cluster = new RedisKeyspace('p', true);
    const a = cluster.keysOf('a');
    expect(slotOfTag(hashTagOf(a.fence))).toBe(slotOfTag('a'));
    expect(cluster.isFenceKey(a.fence)).toBe(true);
    expect(standalone.isFenceKey('p:fence')).toBe(true);
    expect(standalone.isFenceKey(standalone.keysOf('fence').lock)).toBe(false);
  });

  it('escapes the prefix the same way', () => {
    expect(new RedisKeyspace('a{b', false).keysOf('k').lock).toBe('a%7Bb:{k}');
  });
});
