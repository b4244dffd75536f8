import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import type { DeadlineQueue } from '../../internal/deadline-queue';
import { SETTLED, type RedisWaiter } from './redis-waiter';

/** Told when a waiter's budget ran out. */
export interface WaitBudgetHost {
  waitEnded(waiter: RedisWaiter): void;
}

/**
 * Waiters' budgets (`waitTimeoutMs`). A budget runs from the call, not from the
 * reply: under a burst the script may wait behind thousands of others on the
 * connection. But not from within the caller's own synchronous burst: a call made
 * among 80,000 in one loop cannot start waiting before the loop lets go, and its
 * budget is not spent on that stall (issue 11). So budgets start at the first
 * turn of the event loop after the call, one stamp for all calls of that turn.
 */
export class RedisWaitBudgets {
  /** Waiters whose budget starts at the next turn of the event loop. */
  private readonly unstamped: RedisWaiter[] = [];
  // The stamping turn is scheduled here, not in the request that happened to come first.
  private readonly scope = new AsyncResource('nestjs-serialized.redis-wait-budgets');
  private readonly onStamp = (): void => this.stamp();

  constructor(
    private readonly deadlines: DeadlineQueue,
    private readonly host: WaitBudgetHost,
  ) {}

  start(waiter: RedisWaiter): void {
    if (this.unstamped.push(waiter) === 1) this.scope.runInAsyncScope(() => setImmediate(this.onStamp));
  }

  /** Looks at a waiter whose budget ran out again in `delayMs`. */
  recheck(waiter: RedisWaiter, delayMs: number): void {
    waiter.deadline = this.deadlines.schedule(delayMs, () => this.host.waitEnded(waiter));
  }

  private stamp(): void {
    const now = performance.now();
    for (const waiter of this.unstamped) {
      if (waiter.phase === SETTLED) continue;
      waiter.startedAt = now;
      waiter.deadline = this.deadlines.schedule(waiter.waitTimeoutMs, () => this.host.waitEnded(waiter));
    }
    this.unstamped.length = 0;
  }
}
