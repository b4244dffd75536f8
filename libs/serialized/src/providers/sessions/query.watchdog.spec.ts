import { QueryWatchdog, type Watched } from './query.watchdog';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Records, per watchdog tick, whether its one statement was overdue. */
class Statement implements Watched {
  readonly checks: boolean[] = [];
  constructor(private readonly deadline: number) {}
  checkOverdue(now: number): void {
    this.checks.push(now >= this.deadline);
  }
}

describe('QueryWatchdog', () => {
  it('does not count a stall of our own event loop as time the server left a statement unanswered', async () => {
    const watchdog = new QueryWatchdog(20);
    const statement = new Statement(watchdog.started(300));
    watchdog.add(statement);
    const until = Date.now() + 1000;
    while (Date.now() < until) {
      // our loop is blocked for 1 s, more than the statement's 300 ms bound
    }
    await sleep(60);
    expect(statement.checks.length).toBeGreaterThan(0);
    expect(statement.checks).not.toContain(true);
    // Running time does count: the statement is overdue 300 ms after it started, stall aside.
    const startedWaiting = Date.now();
    while (!statement.checks.includes(true) && Date.now() - startedWaiting < 5000) await sleep(10);
    expect(statement.checks).toContain(true);
    watchdog.finished();
    await sleep(60);
    expect(watchdog.armed).toBe(false);
  });
});
