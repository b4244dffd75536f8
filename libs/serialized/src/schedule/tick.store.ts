/**
 * Why a tick was not claimed: another instance (or this one) claimed it or a later
 * one (`already_run`); a run of the name is still running within its lease
 * (`overlap`); the tick lies more than `maxAheadMs` ahead of the backend's clock
 * (`clock_ahead`).
 */
export type TickRefusal = 'already_run' | 'overlap' | 'clock_ahead';

/** A claim's outcome, with the backend's clock when it decided (ms since the epoch). */
export type TickClaim =
  | { readonly claimed: true; readonly backendNow: number }
  | { readonly claimed: false; readonly reason: TickRefusal; readonly backendNow: number };

/** One claim attempt: `owner` is unique to it, and names the run its renewals and finish belong to. */
export interface TickClaimRequest {
  readonly name: string;
  readonly tick: number;
  readonly owner: string;
  readonly leaseMs: number;
  readonly maxAheadMs: number;
}

/**
 * Where the ticks of each name are claimed: one small record per name, holding the
 * last claimed tick and, while its run runs, the owner and the backend time until
 * which it counts as running. Every decision is one atomic step in the backend on
 * the backend's clock (docs/scheduling.md):
 *
 * - `claim` succeeds only if `tick` is later than the last claimed tick, no run is
 *   running (its lease has not run out), and `tick` is at most `maxAheadMs` ahead
 *   of the backend's clock; it then records `tick`, `owner` and a lease of `leaseMs`.
 * - `renew` moves the lease to `leaseMs` from now if the record is still `owner`'s.
 * - `finish` ends the run if the record is still `owner`'s.
 */
export interface TickStore {
  claim(request: TickClaimRequest): Promise<TickClaim>;
  /** Whether the record was still `owner`'s (and its lease now runs `leaseMs` more). */
  renew(name: string, owner: string, leaseMs: number): Promise<boolean>;
  finish(name: string, owner: string): Promise<void>;
  /** Releases what the store opened itself (never the provider's connections). */
  close(): Promise<void>;
}
