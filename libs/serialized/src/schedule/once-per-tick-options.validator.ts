import type { OncePerTickOptions } from '../metadata/once-per-tick-options.interface';
import { ONCE_PER_TICK_DEFAULTS as D } from './once-per-tick.defaults';

const isIntegerIn = (value: unknown, min: number, max: number) => Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/**
 * Checks `@OncePerTick`'s options when the decorator is applied (class definition
 * time): a bad one throws a `TypeError` naming it and `Class#method`.
 */
export function assertOncePerTickOptions(options: OncePerTickOptions, handler: string): void {
  const problems: string[] = [];
  const known = new Set(['name', 'maxClockSkewMs', 'leaseMs']);
  for (const key of Object.keys(options)) if (!known.has(key)) problems.push(`unknown option ${key} (accepted: ${[...known].join(', ')})`);
  if (options.name !== undefined && (typeof options.name !== 'string' || !options.name.trim() || options.name.length > D.maxNameLength)) {
    problems.push(`name must be a non-blank string of at most ${D.maxNameLength} characters`);
  }
  if (options.maxClockSkewMs !== undefined && !isIntegerIn(options.maxClockSkewMs, 0, D.maxClockSkewLimitMs)) {
    problems.push(`maxClockSkewMs must be an integer from 0 to ${D.maxClockSkewLimitMs}`);
  }
  if (options.leaseMs !== undefined && !isIntegerIn(options.leaseMs, D.minLeaseMs, D.maxLeaseMs)) {
    problems.push(`leaseMs must be an integer from ${D.minLeaseMs} to ${D.maxLeaseMs}`);
  }
  if (problems.length) throw new TypeError(`@OncePerTick on ${handler}: ${problems.join('; ')}`);
}
