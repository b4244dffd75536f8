import { DeadlineQueue, type LinedDeadline } from './deadline.queue';

/** A lined deadline that records when (fake time) it fired. */
function lined(name: string, fired: string[], onFire?: () => void): LinedDeadline {
  return {
    at: 0,
    line: undefined,
    before: undefined,
    after: undefined,
    fire() {
      fired.push(`${name}@${Date.now()}`);
      onFire?.();
    },
  };
}

describe('DeadlineQueue: deadlines in line (addInLine)', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('fires each at its own time, in order, with one timer', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    queue.addInLine(lined('a', fired), 100);
    jest.advanceTimersByTime(40);
    queue.addInLine(lined('b', fired), 100);
    queue.addInLine(lined('c', fired), 30);
    expect(jest.getTimerCount()).toBe(1);
    expect(queue.size).toBe(3);
    jest.advanceTimersByTime(29);
    expect(fired).toEqual([]);
    jest.advanceTimersByTime(200);
    expect(fired).toEqual(['c@70', 'a@100', 'b@140']);
    expect([queue.size, queue.armed, jest.getTimerCount()]).toEqual([0, false, 0]);
  });

  it('a cancelled first deadline makes the next wait for its own time, not fire early', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    const a = lined('a', fired);
    queue.addInLine(a, 100);
    jest.advanceTimersByTime(50);
    queue.addInLine(lined('b', fired), 100);
    queue.cancelInLine(a);
    queue.cancelInLine(a); // twice is harmless
    expect(queue.armed).toBe(true);
    jest.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(fired).toEqual(['b@150']);
    expect(queue.armed).toBe(false);
  });

  it('cancels from the middle and the end, and drops the timer when the last one goes', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    const entries = ['a', 'b', 'c', 'd'].map((name) => lined(name, fired));
    for (const entry of entries) {
      queue.addInLine(entry, 10);
      jest.advanceTimersByTime(1);
    }
    queue.cancelInLine(entries[1]);
    queue.cancelInLine(entries[3]);
    jest.advanceTimersByTime(20);
    expect(fired).toEqual(['a@10', 'c@12']);
    const e = lined('e', fired);
    queue.addInLine(e, 10);
    queue.cancelInLine(e);
    expect([queue.size, queue.armed, jest.getTimerCount()]).toEqual([0, false, 0]);
  });

  it('interleaves lines of several delays with heap deadlines in time order', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    queue.addInLine(lined('line50', fired), 50);
    queue.schedule(35, () => fired.push(`heap35@${Date.now()}`));
    queue.addInLine(lined('line20', fired), 20);
    jest.advanceTimersByTime(10);
    queue.addInLine(lined('line20b', fired), 20);
    queue.schedule(45, () => fired.push(`heap45@${Date.now()}`));
    jest.advanceTimersByTime(100);
    expect(fired).toEqual(['line20@20', 'line20b@30', 'heap35@35', 'line50@50', 'heap45@55']);
    expect(queue.size).toBe(0);
  });

  it('survives a callback that throws, or that cancels and adds deadlines of its own line', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    const c = lined('c', fired);
    queue.addInLine(
      lined('a', fired, () => {
        queue.cancelInLine(c);
        queue.addInLine(lined('d', fired), 10);
        throw new Error('boom');
      }),
      10,
    );
    queue.addInLine(lined('b', fired), 10);
    queue.addInLine(c, 10);
    jest.advanceTimersByTime(10);
    expect(fired).toEqual(['a@10', 'b@10']);
    jest.advanceTimersByTime(10);
    expect(fired).toEqual(['a@10', 'b@10', 'd@20']);
    expect([queue.size, queue.armed]).toEqual([0, false]);
  });

  it('clear() drops them unfired; cancelling one afterwards is harmless', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    const a = lined('a', fired);
    queue.addInLine(a, 10);
    queue.addInLine(lined('b', fired), 10);
    queue.clear();
    queue.cancelInLine(a);
    expect([queue.size, queue.armed]).toEqual([0, false]);
    jest.advanceTimersByTime(50);
    expect(fired).toEqual([]);
    queue.addInLine(lined('c', fired), 10);
    jest.advanceTimersByTime(10);
    expect(fired).toEqual(['c@60']);
  });
});
