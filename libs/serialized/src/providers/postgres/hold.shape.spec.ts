import { holdShapeOf, markKeysOf } from './hold.shape';
import { slotKeyOf } from './lock.session';

describe('hold shape marks', () => {
  const lockKey = '-5764607523034234880';
  const shape = (shared: boolean, limit: number) => holdShapeOf('app', 'tenant-1', lockKey, shared, limit);

  it('gives every shape its own pair of digit marks and one presence mark per key', () => {
    const shapes = [shape(true, 1), ...[2, 3, 31, 32, 33, 64, 999, 1000].map((limit) => shape(false, limit))];
    const marks = shapes.map((s) => markKeysOf(s.markerKey));
    // Two shapes differ in one digit mark at least (a reader and groups of every limit alike).
    const pairs = new Set(marks.map(([d0, d1]) => `${d0}/${d1}`));
    expect(pairs.size).toBe(shapes.length);
    expect(new Set(marks.map(([, , presence]) => presence)).size).toBe(1);
  });

  it('keeps the marks apart from the slots of the key, and from the key and its gate', () => {
    const group = shape(false, 1000);
    const slots = new Set(Array.from({ length: 1000 }, (_, i) => slotKeyOf(group.slotBase, i)));
    for (const limit of [0, 2, 1000]) {
      for (const mark of markKeysOf(shape(limit === 0, Math.max(limit, 1)).markerKey)) {
        expect(slots.has(mark)).toBe(false);
        expect([lockKey, group.gateKey]).not.toContain(mark);
      }
    }
  });

  it('stays within PostgreSQL bigint for negative and positive slot bases', () => {
    for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const { markerKey } = holdShapeOf('p', key, lockKey, false, 7);
      for (const mark of markKeysOf(markerKey)) expect(BigInt.asIntN(64, BigInt(mark))).toBe(BigInt(mark));
    }
  });
});
