import { HolderDrain } from './holder.drain';

describe('HolderDrain', () => {
  it('counts held locks per key when asked to, so holds(key) is false once the last of them is gone', () => {
    const held = new HolderDrain<{ key: string }>(true);
    const a1 = { key: 'a' };
    const a2 = { key: 'a' };
    held.add(a1);
    held.add(a2);
    held.add({ key: 'b' });
    held.delete(a1);
    held.delete(a1); // twice: counted once
    expect(held.holds('a')).toBe(true);
    held.delete(a2);
    expect(held.holds('a')).toBe(false);
    expect(held.holds('b')).toBe(true);
    expect(held.size).toBe(1);
  });

  it('drains at once with nothing held, after the grace period with a holder left', async () => {
    const held = new HolderDrain<{ key: string }>();
    await expect(held.drain(10_000)).resolves.toBe(true);
    const other = new HolderDrain<{ key: string }>();
    other.add({ key: 'a' });
    await expect(other.drain(20)).resolves.toBe(false);
    expect(other.closing).toBe(true);
    expect(other.holds('a')).toBe(false); // not counted unless asked for
  });

  it('counts without keeping the locks when asked (track: false), and drains when the count reaches 0', async () => {
    const held = new HolderDrain<{ key: string }>(false, false);
    const a = { key: 'a' };
    const b = { key: 'b' };
    held.add(a);
    held.add(b);
    expect([held.size, [...held.values()]]).toEqual([2, []]);
    const drained = held.drain(10_000);
    held.delete(a);
    expect(held.size).toBe(1);
    held.delete(b);
    await expect(drained).resolves.toBe(true);
    expect(held.size).toBe(0);
  });
});
