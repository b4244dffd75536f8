import { performance } from 'node:perf_hooks';
import { DeadlineQueue, type Deadline } from '../../internal/deadline.queue';
import type { IdempotencyStore } from '../idempotency.store';
import type { StoredResponse } from '../stored-response.codec';

interface Entry {
  readonly record: StoredResponse;
  readonly expiresAt: number;
  readonly deadline: Deadline;
}

/**
 * Records in this process (the in-memory driver): one map per provider, so two
 * apps in one process never share them. Each record is removed when its TTL ends,
 * by one timer for all of them (none while the store is empty), which never keeps
 * the process alive.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, Entry>();
  private readonly deadlines = new DeadlineQueue({ unref: true, name: 'nestjs-serialized.idempotency-expiry' });

  /** Records held (expired ones leave at their deadline). */
  get size(): number {
    return this.entries.size;
  }

  /** Whether the expiry timer is armed (not when the store is empty). */
  get timerArmed(): boolean {
    return this.deadlines.armed;
  }

  async get(key: string): Promise<StoredResponse | undefined> {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // The timer may be late (a busy loop); the TTL is not.
    if (performance.now() >= entry.expiresAt) {
      this.delete(key, entry);
      return undefined;
    }
    return entry.record;
  }

  async set(key: string, record: StoredResponse, ttlMs: number): Promise<void> {
    const previous = this.entries.get(key);
    if (previous) this.delete(key, previous);
    const stored: StoredResponse = { ...record, body: record.body && Buffer.from(record.body) };
    const deadline = this.deadlines.schedule(ttlMs, () => {
      if (this.entries.get(key)?.deadline === deadline) this.entries.delete(key);
    });
    this.entries.set(key, { record: stored, expiresAt: performance.now() + ttlMs, deadline });
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.deadlines.clear();
  }

  private delete(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.deadlines.cancel(entry.deadline);
  }
}
