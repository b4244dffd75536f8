import type { Attributes, Counter, MeterProvider } from '@opentelemetry/api';
import { loadOtelApi } from '../observability/otel-api.loader';
import { SERIALIZED_METER_NAME } from '../observability/serialized.metrics';
import type { TickRefusal } from './tick.store';

/** Why a firing did not run the method (the `reason` attribute of `serialized.tick.skipped`). */
export type TickSkipReason = TickRefusal | 'backend_error';

/**
 * The OpenTelemetry counters of one app's `@OncePerTick` methods (one per app: no
 * state shared between two apps in a process), on the same meter as the lock
 * metrics. Attributes: `name` (the tick name: from code, so bounded), `driver`, and
 * on `serialized.tick.skipped` the `reason`. Created only when `@opentelemetry/api`
 * is installed and a MeterProvider is registered. @internal
 */
export class TickMetrics {
  private readonly runs: Counter;
  private readonly skipped: Counter;
  private readonly attributes = new Map<string, Attributes>();

  private constructor(
    meter: ReturnType<MeterProvider['getMeter']>,
    private readonly driver: string,
  ) {
    this.runs = meter.createCounter('serialized.tick.runs', { description: 'Ticks this instance claimed and ran' });
    this.skipped = meter.createCounter('serialized.tick.skipped', {
      description: 'Ticks this instance fired but did not run: already run, overlap with a running run, clock ahead, backend error',
    });
  }

  /** The counters, or `undefined` when `@opentelemetry/api` is missing or nothing records. */
  static create(driver: string): TickMetrics | undefined {
    const api = loadOtelApi();
    if (!api) return undefined;
    const meter = api.metrics.getMeterProvider().getMeter(SERIALIZED_METER_NAME);
    if (meter instanceof (api.createNoopMeter().constructor as new () => unknown)) return undefined;
    return new TickMetrics(meter, driver);
  }

  ran(name: string): void {
    this.runs.add(1, this.attributesOf(name, undefined));
  }

  skip(name: string, reason: TickSkipReason): void {
    this.skipped.add(1, this.attributesOf(name, reason));
  }

  private attributesOf(name: string, reason: TickSkipReason | undefined): Attributes {
    const id = `${reason ?? ''}\u0000${name}`;
    let attributes = this.attributes.get(id);
    if (!attributes) {
      attributes = reason ? { name, driver: this.driver, reason } : { name, driver: this.driver };
      this.attributes.set(id, attributes);
    }
    return attributes;
  }
}
