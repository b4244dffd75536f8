import { DeadlineQueue, MAX_TIMER_DELAY_MS } from './deadline.queue';

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

  it('arms no timer beyond 2^31-1 ms: a later deadline is reached by re-arming, once per 24.8 days, not spinning', () => {
    const setTimeoutSpy = jest.spyOn(global, 'setTimeout');
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    const far = 3 * MAX_TIMER_DELAY_MS + 12_345;
    queue.schedule(far, () => fired.push('far'));
    queue.schedule(Number.MAX_SAFE_INTEGER, () => fired.push('never'));
    const delays = () => setTimeoutSpy.mock.calls.map(([, delay]) => delay ?? 0);
    expect(delays()).toEqual([MAX_TIMER_DELAY_MS]);
    jest.advanceTimersByTime(far - 1);
    expect(fired).toEqual([]);
    // Woken at each bound, then at the deadline itself: 4 timers for about 75 days.
    expect(delays().length).toBe(4);
    expect(Math.max(...delays())).toBe(MAX_TIMER_DELAY_MS);
    jest.advanceTimersByTime(1);
    expect(fired).toEqual(['far']);
    expect(queue.armed).toBe(true); // the MAX_SAFE_INTEGER deadline, one bounded timer
    expect(Math.max(...delays())).toBe(MAX_TIMER_DELAY_MS);
    queue.clear();
    setTimeoutSpy.mockRestore();
  });

  it('disarms its timer when the last deadline is cancelled', () => {
    const queue = new DeadlineQueue();
    const entry = queue.schedule(1000, () => undefined);
    queue.cancel(entry);
    expect(queue.armed).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('DeadlineQueue on real timers', () => {
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  it('fires deadlines in time order, never the cancelled ones', async () => {
    const queue = new DeadlineQueue();
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

  it('keeps the timer when the earliest deadline is cancelled, and drops it once nothing is left', async () => {
    const queue = new DeadlineQueue();
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
    const queue = new DeadlineQueue();
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
    const queue = new DeadlineQueue();
    const fired: string[] = [];
    queue.schedule(5, () => {
      throw new Error('boom');
    });
    queue.schedule(5, () => fired.push('after'));
    await sleep(30);
    expect(fired).toEqual(['after']);
  });
});

describe('DeadlineQueue with unref', () => {
  it('lets the process exit while deadlines are pending', () => {
    const queue = new DeadlineQueue({ unref: true });
    queue.schedule(60_000, () => undefined);
    const timer = (queue as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    queue.clear();
    expect(queue.armed).toBe(false);
  });

  it('keeps it alive by default', () => {
    const queue = new DeadlineQueue();
    queue.schedule(60_000, () => undefined);
    expect((queue as unknown as { timer: NodeJS.Timeout }).timer.hasRef()).toBe(true);
    queue.clear();
  });
});
