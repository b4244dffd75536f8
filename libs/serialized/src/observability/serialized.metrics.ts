import { performance } from 'node:perf_hooks';
import type { Attributes, BatchObservableResult, Histogram, Meter, MeterProvider, Observable } from '@opentelemetry/api';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../errors';
import type { LockProvider } from '../lock.provider';
import { driverOf } from './driver-name.resolver';
import { loadOtelApi } from './otel-api.loader';

/** Name of the OpenTelemetry meter (and prefix of every instrument). */
export const SERIALIZED_METER_NAME = 'nestjs-serialized';

/** Most distinct `scope` values recorded per `LockService`; later ones are recorded as `other`. */
export const MAX_METRIC_SCOPES = 200;

/** Seconds: from an uncontended in-memory grant to a long queue. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** How an acquisition ended (the `outcome` attribute of `serialized.lock.wait.duration`). */
export type WaitOutcome = 'acquired' | 'busy' | 'timeout' | 'backend_error' | 'aborted';

/**
 * One scope's attribute sets, built once, and its tallies. Counters and the
 * waiters gauge are plain numbers here, read by OpenTelemetry when it collects:
 * an SDK counter update costs microseconds (attribute hashing), a tally a few
 * nanoseconds.
 */
interface ScopeAttributes {
  readonly base: Attributes;
  readonly wait: Readonly<Record<WaitOutcome, Attributes>>;
  readonly released: Attributes;
  readonly lost: Attributes;
  acquired: number;
  busy: number;
  timeouts: number;
  lost_: number;
  backendErrors: number;
  waiters: number;
}

/**
 * The OpenTelemetry instruments of one `LockService` (one per app: no state is
 * shared between two apps in a process). Created only when `@opentelemetry/api`
 * is installed and a MeterProvider is registered; otherwise `LockService` holds
 * `undefined` and pays one null check per call.
 *
 * Attributes are `scope` (the lock key up to its first `:`: a `@Serialized`
 * scope, or `wallet` for `run('wallet:42', …)`), `driver` and, on the
 * histograms, `outcome` — never the key itself, whose values are unbounded.
 * @internal
 */
export class SerializedMetrics {
  private readonly scopes = new Map<string, ScopeAttributes>();
  private readonly waitDuration: Histogram;
  private readonly holdDuration: Histogram;

  constructor(
    meter: Meter,
    private readonly driver: string,
  ) {
    const duration = { unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } };
    this.waitDuration = meter.createHistogram('serialized.lock.wait.duration', {
      ...duration,
      description: 'Time from asking for a lock to getting it or giving up',
    });
    this.holdDuration = meter.createHistogram('serialized.lock.hold.duration', {
      ...duration,
      description: 'Time a lock was held (outcome: released or lost)',
    });
    const acquired = meter.createObservableCounter('serialized.lock.acquired', { description: 'Locks acquired' });
    const busy = meter.createObservableCounter('serialized.lock.busy', {
      description: 'Acquisitions refused at once: reject mode or maxPending',
    });
    const timeouts = meter.createObservableCounter('serialized.lock.timeouts', {
      description: 'Acquisitions that waited waitTimeoutMs in vain',
    });
    const lost = meter.createObservableCounter('serialized.lock.lost', { description: 'Locks lost while their holder ran' });
    const backendErrors = meter.createObservableCounter('serialized.lock.backend_errors', {
      description: 'Acquisitions failed because the backend could not be used',
    });
    const waiters = meter.createObservableUpDownCounter('serialized.lock.waiters', { description: 'Callers waiting for a lock right now' });
    const observables: Observable[] = [acquired, busy, timeouts, lost, backendErrors, waiters];
    meter.addBatchObservableCallback((result: BatchObservableResult) => {
      for (const scope of this.scopes.values()) {
        result.observe(acquired, scope.acquired, scope.base);
        result.observe(busy, scope.busy, scope.base);
        result.observe(timeouts, scope.timeouts, scope.base);
        result.observe(lost, scope.lost_, scope.base);
        result.observe(backendErrors, scope.backendErrors, scope.base);
        result.observe(waiters, scope.waiters, scope.base);
      }
    }, observables);
  }

  /**
   * The instruments for `provider`'s `LockService`, on `meterProvider` (default:
   * the global one, which must be registered before the app is created); or
   * `undefined` when `@opentelemetry/api` is not installed or nothing records.
   */
  static create(provider: LockProvider, meterProvider?: MeterProvider): SerializedMetrics | undefined {
    const api = loadOtelApi();
    if (!api) return undefined;
    const meter = (meterProvider ?? api.metrics.getMeterProvider()).getMeter(SERIALIZED_METER_NAME);
    // No MeterProvider registered: every instrument would be a no-op; skip the work.
    if (meter instanceof (api.createNoopMeter().constructor as new () => Meter)) return undefined;
    return new SerializedMetrics(meter, driverOf(provider));
  }

  /** A caller starts waiting for `key`; returns the start time to hand back below. */
  waiting(key: string): number {
    this.attributesOf(key).waiters++;
    return performance.now();
  }

  /** The caller that started waiting at `since` got `key`. */
  acquired(key: string, since: number): void {
    const attributes = this.attributesOf(key);
    attributes.waiters--;
    attributes.acquired++;
    this.waitDuration.record((performance.now() - since) / 1000, attributes.wait.acquired);
  }

  /**
   * `key` was free and granted synchronously (in-memory): counted, but not put
   * in the wait histogram — its wait is nil, and recording it would cost more
   * than the grant itself.
   */
  acquiredAtOnce(key: string): void {
    this.attributesOf(key).acquired++;
  }

  /** The caller that started waiting at `since` did not get `key`. */
  failed(key: string, since: number, error: unknown): void {
    const attributes = this.attributesOf(key);
    const outcome = outcomeOf(error);
    attributes.waiters--;
    this.waitDuration.record((performance.now() - since) / 1000, attributes.wait[outcome]);
    if (outcome === 'busy') attributes.busy++;
    else if (outcome === 'timeout') attributes.timeouts++;
    else if (outcome === 'backend_error') attributes.backendErrors++;
  }

  /** A lock acquired at `since` was released; `lost` when it had been lost before. */
  released(key: string, since: number, lost: boolean): void {
    const attributes = this.attributesOf(key);
    this.holdDuration.record((performance.now() - since) / 1000, lost ? attributes.lost : attributes.released);
    if (lost) attributes.lost_++;
  }

  /** A release that was issued as a plain one found the lock lost (the lease had run out): it counts as lost. */
  lostAtRelease(key: string): void {
    this.attributesOf(key).lost_++;
  }

  private attributesOf(key: string): ScopeAttributes {
    const colon = key.indexOf(':');
    let scope = colon > 0 ? key.slice(0, colon) : '(none)';
    let attributes = this.scopes.get(scope);
    if (attributes) return attributes;
    // Keys whose first part is itself a value (`${id}:…`) would make a series per value.
    if (this.scopes.size >= MAX_METRIC_SCOPES) scope = 'other';
    attributes = this.scopes.get(scope) ?? scopeAttributes(scope, this.driver);
    this.scopes.set(scope, attributes);
    return attributes;
  }
}

function scopeAttributes(scope: string, driver: string): ScopeAttributes {
  const base = { scope, driver };
  const withOutcome = (outcome: string): Attributes => ({ scope, driver, outcome });
  return {
    base,
    wait: {
      acquired: withOutcome('acquired'),
      busy: withOutcome('busy'),
      timeout: withOutcome('timeout'),
      backend_error: withOutcome('backend_error'),
      aborted: withOutcome('aborted'),
    },
    released: withOutcome('released'),
    lost: withOutcome('lost'),
    acquired: 0,
    busy: 0,
    timeouts: 0,
    lost_: 0,
    backendErrors: 0,
    waiters: 0,
  };
}

/** How a wait that did not get its key ended (the `outcome` of the wait histogram and of a `serialized.wait` span). @internal */
export function outcomeOf(error: unknown): WaitOutcome {
  if (error instanceof LockBusyError) return 'busy';
  if (error instanceof LockTimeoutError) return 'timeout';
  if (error instanceof LockBackendError) return 'backend_error';
  // The caller's signal (a client that left) or a bad argument: not the lock's doing.
  return 'aborted';
}
