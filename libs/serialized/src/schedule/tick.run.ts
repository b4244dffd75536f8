import type { TickStore } from './tick.store';

/** Where a run is in its life; only the transitions below change it. */
type TickRunPhase = 'running' | 'lost' | 'finished';

/**
 * One claimed run of a name, from its claim to its finish: keeps the claim's lease
 * alive by renewing it every third of `leaseMs` (one renewal at a time, never
 * throwing from its timer), so that a run however long keeps later ticks away, and
 * ends it in the backend when the method is done, so the next tick may run at once.
 *
 * A renewal that finds the record someone else's means the lease ran out (this
 * process was stalled, or the backend unreachable, for a whole lease) and a later
 * tick was claimed: the run warns and renews no more. The method itself
 * cannot be stopped; docs/scheduling.md says so.
 */
export class TickRun {
  private phase: TickRunPhase = 'running';
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: TickStore,
    readonly name: string,
    readonly owner: string,
    private readonly leaseMs: number,
    private readonly warn: (problem: string) => void,
  ) {
    this.scheduleRenewal();
  }

  /** The method returned or threw: stop renewing and end the run in the backend (owner-checked). */
  async finish(): Promise<void> {
    const wasRunning = this.phase === 'running';
    this.phase = 'finished';
    clearTimeout(this.timer);
    if (wasRunning) await this.store.finish(this.name, this.owner);
  }

  private scheduleRenewal(): void {
    this.timer = setTimeout(() => this.renew(), Math.max(1, Math.floor(this.leaseMs / 3)));
    // A renewal never keeps the process alive: the method's own work does, if it must.
    this.timer.unref();
  }

  private renew(): void {
    this.store.renew(this.name, this.owner, this.leaseMs).then(
      (kept) => {
        if (this.phase !== 'running') return;
        if (kept) return this.scheduleRenewal();
        this.lose('its lease ran out and a later tick was claimed');
      },
      (error: unknown) => {
        if (this.phase !== 'running') return;
        // The backend may answer the next one: the lease holds until then.
        this.warn(`a renewal failed (${(error as Error)?.message ?? error}); retrying`);
        this.scheduleRenewal();
      },
    );
  }

  private lose(reason: string): void {
    this.phase = 'lost';
    this.warn(reason);
  }
}
