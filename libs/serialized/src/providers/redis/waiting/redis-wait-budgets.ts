import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { LockTimeoutError } from '../../../errors/index';
import type { DeadlineQueue } from '../../../internal/deadline-queue';
import type { RedisConnection } from '../transport/redis-connection';
import { SENDING, SETTLED, type RedisWaiter } from './redis-waiter';

/** What a waiter whose budget ran out is told through. */
export interface WaitBudgetHost {
  /** The waiter leaves with `error` (its place in Redis, if any, is given up). */
  giveUp(waiter: RedisWaiter, error: unknown): void;
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
  /** How often a waiter whose budget ran out while its script had no answer looks again. */
  private readonly recheckMs: number;

  constructor(
    private readonly deadlines: DeadlineQueue,
    private readonly connection: RedisConnection,
    private readonly host: WaitBudgetHost,
  ) {
    this.recheckMs = Math.max(10, connection.timeoutMs / 8);
  }

  start(waiter: RedisWaiter): void {
    if (this.unstamped.push(waiter) === 1) this.scope.runInAsyncScope(() => setImmediate(this.onStamp));
  }

  /**
   * A waiter's budget ran out. Queued (or confirming a hand-off, or riding): it
   * leaves. Its script unanswered while others were answered since: Redis is
   * merely busy, a timeout like any other (the reply undoes what the script took).
   * Nothing answered since: Redis may be gone, which the backend bound says
   * (`LockBackendError`, never a 429 for an outage), so it looks again shortly.
   */
  waitEnded(waiter: RedisWaiter): void {
    waiter.deadline = undefined;
    if (waiter.phase === SETTLED) return;
    const key = waiter.queue.key;
    if (waiter.phase !== SENDING || this.connection.answeredSince(key, waiter.startedAt)) {
      this.host.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs));
      return;
    }
    waiter.deadline = this.deadlines.schedule(this.recheckMs, () => this.waitEnded(waiter));
  }

  private stamp(): void {
    const now = performance.now();
    for (const waiter of this.unstamped) {
      if (waiter.phase === SETTLED) continue;
      waiter.startedAt = now;
      waiter.deadline = this.deadlines.schedule(waiter.waitTimeoutMs, () => this.waitEnded(waiter));
    }
    this.unstamped.length = 0;
  }
}
