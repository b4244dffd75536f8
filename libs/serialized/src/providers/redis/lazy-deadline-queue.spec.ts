import { LazyDeadlineQueue } from './lazy-deadline-queue';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('LazyDeadlineQueue', () => {
  it('fires deadlines in time order, never the cancelled ones', async () => {
    const queue = new LazyDeadlineQueue();
    const fired: string[] = [];
    queue.schedule(40, () => fired.push('c'));
    const b = queue.schedule(20, () => fired.push('b'));
    queue.schedule(10, () => fired.push('a'));
    queue.cancel(b);
    queue.cancel(b); // twice is harmless
    await sleep(80);
    expect(fired).toEqual(['a', 'c']);
    expect(queue.size).toBe(0);
  });

  it('keeps the timer when the earliest deadline is cancelled, and re-arms for what is left', async () => {
    const queue = new LazyDeadlineQueue();
    const fired: string[] = [];
    const first = queue.schedule(10, () => fired.push('first'));
    queue.schedule(30, () => fired.push('second'));
    queue.cancel(first);
    expect(queue.armed).toBe(true);
    await sleep(60);
    expect(fired).toEqual(['second']);
    expect(queue.armed).toBe(false); // nothing left: no timer
  });

  it('re-arms for a deadline that is earlier than one a firing callback scheduled', async () => {
    const queue = new LazyDeadlineQueue();
    const fired: string[] = [];
    queue.schedule(5, () => {
      fired.push('a');
      queue.schedule(200, () => fired.push('late'));
    });
    queue.schedule(40, () => fired.push('b'));
    await sleep(80);
    expect(fired).toEqual(['a', 'b']);
    queue.clear();
    expect(queue.armed).toBe(false);
  });

  it('survives a throwing callback', async () => {
    const queue = new LazyDeadlineQueue();
    const fired: string[] = [];
    queue.schedule(5, () => {
      throw new Error('boom');
    });
    queue.schedule(5, () => fired.push('after'));
    await sleep(30);
    expect(fired).toEqual(['after']);
  });
});
