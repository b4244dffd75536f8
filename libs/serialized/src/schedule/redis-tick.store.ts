import { withTimeout } from '../observability/with.timeout';
import type { ScriptClient } from '../internal/lua.script';
import { ONCE_PER_TICK_DEFAULTS } from './once-per-tick.defaults';
import { TICK_SCRIPTS } from './redis-tick.scripts';
import type { TickClaim, TickClaimRequest, TickRefusal, TickStore } from './tick.store';

/** What the Redis provider lends the store. */
export interface RedisTickBackend {
  /** The provider's command client (standalone, Sentinel or Cluster). */
  readonly client: ScriptClient;
  /** The Redis key of `name`'s record: under the provider's `keyPrefix`, one hash slot per name. */
  recordKeyOf(name: string): string;
  /** How long a call may take before it fails with `LockBackendError` (the module's `connectTimeoutMs`). */
  readonly timeoutMs: number;
}

/**
 * Tick records in Redis: one hash per name (`<prefix>:{tick:<name>}:tick` with
 * `tick`, `until`, `owner`), changed only by the scripts in lua/, each one atomic
 * step on the server's clock (`TIME`). A record expires a week after its last write
 * (see `ONCE_PER_TICK_DEFAULTS.redisRecordRetentionMs`).
 */
export class RedisTickStore implements TickStore {
  private readonly retentionMs: number;

  constructor(private readonly backend: RedisTickBackend) {
    this.retentionMs = ONCE_PER_TICK_DEFAULTS.redisRecordRetentionMs;
  }

  async claim({ name, tick, owner, leaseMs, maxAheadMs }: TickClaimRequest): Promise<TickClaim> {
    const retention = Math.max(this.retentionMs, 2 * leaseMs);
    const [outcome, now] = (await this.call(
      TICK_SCRIPTS.claim.run(this.backend.client, [this.backend.recordKeyOf(name), tick, leaseMs, owner, maxAheadMs, retention]),
    )) as [string, string];
    const backendNow = Number(now);
    return outcome === 'claimed' ? { claimed: true, backendNow } : { claimed: false, reason: outcome as TickRefusal, backendNow };
  }

  async renew(name: string, owner: string, leaseMs: number): Promise<boolean> {
    const retention = Math.max(this.retentionMs, 2 * leaseMs);
    return (
      (await this.call(TICK_SCRIPTS.renew.run(this.backend.client, [this.backend.recordKeyOf(name), owner, leaseMs, retention]))) === 1
    );
  }

  async finish(name: string, owner: string): Promise<void> {
    await this.call(TICK_SCRIPTS.finish.run(this.backend.client, [this.backend.recordKeyOf(name), owner]));
  }

  async close(): Promise<void> {
    // The connection is the provider's: it closes it.
  }

  private call(work: Promise<unknown>): Promise<unknown> {
    return withTimeout(work, this.backend.timeoutMs, 'Redis');
  }
}
