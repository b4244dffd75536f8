import type { Logger } from '@nestjs/common';

/**
 * Says once per provider instance, at debug level, that a per-call `leaseMs`
 * changes nothing on this provider (docs/lease.md), so a reader of the logs who
 * wonders why a lease never ran out finds out why. Per instance, not per module:
 * two apps in one process each say it once.
 */
export class IgnoredLeaseNote {
  private said = false;

  constructor(
    private readonly logger: Logger,
    private readonly provider: string,
    private readonly why: string,
  ) {}

  /** Called with each acquisition's options: one comparison once said, or when no `leaseMs` was given. */
  check(leaseMs: number | undefined, key: string): void {
    if (leaseMs === undefined || this.said) return;
    this.said = true;
    this.logger.debug(
      `${this.provider}: leaseMs=${leaseMs} (first seen for lock "${key}") has no effect here: ${this.why}. Said once; see docs/lease.md.`,
    );
  }
}
