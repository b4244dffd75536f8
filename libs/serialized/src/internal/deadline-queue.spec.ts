import { DeadlineQueue } from './deadline-queue';

describe('DeadlineQueue', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('fires deadlines in time order with a single timer, and none when empty', () => {
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    expect(queue.armed).toBe(false);
    queue.schedule(30, () => fired.push('c'));
    queue.schedule(10, () => fired.push('a'));
    queue.schedule(20, () => fired.push('b'));
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(15);
    expect(fired).toEqual(['a']);
    jest.advanceTimersByTime(20);
    expect(fired).toEqual(['a', 'b', 'c']);
    expect(queue.size).toBe(0);
    expect(queue.armed).toBe(false);
  });

  it('cancels a deadline anywhere in the heap', () => {
    const queue = new DeadlineQueue();
    const fired: number[] = [];
    const entries = [50, 10, 40, 20, 30].map((ms) => queue.schedule(ms, () => fired.push(ms)));
    queue.cancel(entries[1]);
    queue.cancel(entries[2]);
    queue.cancel(entries[2]);
    jest.advanceTimersByTime(100);
    expect(fired).toEqual([20, 30, 50]);
  });

  it('disarms its timer when the last deadline is cancelled', () => {
    const queue = new DeadlineQueue();
    const entry = queue.schedule(1000, () => undefined);
    queue.cancel(entry);
    expect(queue.armed).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
  });
});
