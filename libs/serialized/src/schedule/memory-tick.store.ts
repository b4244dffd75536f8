import type { TickClaim, TickClaimRequest, TickStore } from './tick.store';

interface TickRecord {
  tick: number;
  owner: string;
  runningUntil: number;
}

/**
 * The memory driver's tick records: one app, one process. One store per app (the
 * runner's), never shared between two apps in a process, as the memory driver's
 * locks are not. Times are this process's clock, which is also the backend's.
 */
export class MemoryTickStore implements TickStore {
  private readonly records = new Map<string, TickRecord>();

  constructor(private readonly now: () => number = Date.now) {}

  async claim({ name, tick, owner, leaseMs, maxAheadMs }: TickClaimRequest): Promise<TickClaim> {
    const now = this.now();
    const last = this.records.get(name);
    if (last && last.tick >= tick) return { claimed: false, reason: 'already_run', backendNow: now };
    if (tick > now + maxAheadMs) return { claimed: false, reason: 'clock_ahead', backendNow: now };
    if (last && last.runningUntil > now) return { claimed: false, reason: 'overlap', backendNow: now };
    this.records.set(name, { tick, owner, runningUntil: now + leaseMs });
    return { claimed: true, backendNow: now };
  }

  async renew(name: string, owner: string, leaseMs: number): Promise<boolean> {
    const record = this.records.get(name);
    if (record?.owner !== owner) return false;
    record.runningUntil = this.now() + leaseMs;
    return true;
  }

  async finish(name: string, owner: string): Promise<void> {
    const record = this.records.get(name);
    if (record?.owner === owner) record.runningUntil = 0;
  }

  async close(): Promise<void> {
    // Nothing opened.
  }
}
