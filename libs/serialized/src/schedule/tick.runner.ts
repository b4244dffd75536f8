import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationShutdown,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { canLoad, missingPeerProblem } from '../config/optional.peer';
import { SerializedConfigError } from '../config/serialized-config.error';
import { LockProvider } from '../lock.provider';
import type { OncePerTickMetadata } from '../metadata/once-per-tick-options.interface';
import { SerializedMetadataAccessor } from '../metadata/serialized-metadata.accessor';
import { driverOf } from '../observability/driver-name.resolver';
import type { ResolvedSerializedOptions } from '../serialized-options.interface';
import { SERIALIZED_LOGGER_CONTEXT, SERIALIZED_OPTIONS } from '../serialized.constants';
import { ONCE_PER_TICK_DEFAULTS } from './once-per-tick.defaults';
import { TickMetrics, type TickSkipReason } from './tick.metrics';
import { TickRun } from './tick.run';
import type { TickSchedule } from './tick.schedule';
import { tickScheduleOf } from './tick-schedule.factory';
import { createTickStore } from './tick-store.factory';
import type { TickStore } from './tick.store';

/** What the start-up check learnt about one `@OncePerTick` method. */
interface TickPlan {
  readonly schedule: TickSchedule;
  readonly leaseMs: number;
  readonly maxClockSkewMs: number;
}

const REASONS: Readonly<Record<TickSkipReason, string>> = {
  already_run: 'it was already claimed (by this or another instance)',
  overlap: 'a run of the same name is still running',
  clock_ahead: "this instance's clock is more than maxClockSkewMs ahead of the backend's",
  backend_error: 'the backend could not be reached',
};

/**
 * Runs the `@OncePerTick` methods of one app (one runner per app, reached by each
 * decorated instance through property injection: no state shared between two apps
 * in a process).
 *
 * At start-up it finds every `@OncePerTick` method of the app's providers and
 * controllers and stops start-up, in one `SerializedConfigError`, for one without a
 * schedule decorator (naming `Class#method`), without @nestjs/schedule, or on a
 * provider of the app's own (not memory, redis or postgres). When a schedule fires,
 * {@link fire} names the tick from the schedule and this instance's clock, claims it
 * in the driver's {@link TickStore}, and runs the method only if the claim succeeds,
 * keeping the claim's lease alive while it runs (docs/scheduling.md).
 */
@Injectable()
export class TickRunner implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly plans = new Map<OncePerTickMetadata, TickPlan>();
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Names whose clock-ahead refusal was logged as a warning (later ones go to debug until a claim succeeds). */
  private readonly warnedAhead = new Set<string>();
  private store: TickStore | undefined;
  private metrics: TickMetrics | undefined;
  private closing = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly accessor: SerializedMetadataAccessor,
    private readonly provider: LockProvider,
    @Inject(SERIALIZED_OPTIONS) private readonly options: ResolvedSerializedOptions,
  ) {}

  onModuleInit(): void {
    const problems: string[] = [];
    const found = this.findMethods();
    if (found.length && !canLoad('@nestjs/schedule')) {
      throw new SerializedConfigError([
        missingPeerProblem(`@OncePerTick on ${found.map((m) => m.metadata.handler).join(', ')}`, '@nestjs/schedule'),
      ]);
    }
    for (const { metadata, method } of found) {
      if (this.plans.has(metadata)) continue;
      const schedule = this.accessor.scheduleOf(method);
      if (!schedule) {
        problems.push(`@OncePerTick on ${metadata.handler} needs @Cron, @Interval or @Timeout of @nestjs/schedule on the same method`);
        continue;
      }
      try {
        this.plans.set(metadata, {
          schedule: tickScheduleOf(schedule, metadata.handler),
          leaseMs: metadata.options.leaseMs ?? this.options.leaseMs,
          maxClockSkewMs: metadata.options.maxClockSkewMs ?? ONCE_PER_TICK_DEFAULTS.maxClockSkewMs,
        });
      } catch (error) {
        if (error instanceof SerializedConfigError) throw error;
        problems.push(`@OncePerTick on ${metadata.handler}: its schedule cannot be read (${(error as Error)?.message ?? error})`);
      }
    }
    if (this.plans.size && !problems.length) {
      this.store = createTickStore(this.provider, this.options);
      if (!this.store) {
        problems.push(
          `@OncePerTick (on ${[...this.plans.keys()].map((m) => m.handler).join(', ')}) needs the memory, redis or postgres driver; the active provider is ${driverOf(this.provider)}`,
        );
      }
    }
    if (problems.length) throw new SerializedConfigError(problems);
    if (this.plans.size && this.options.metrics !== 'off') this.metrics = TickMetrics.create(driverOf(this.provider));
  }

  /**
   * A firing of `metadata`'s schedule: runs `run` if this instance claims the tick
   * due now, and resolves with its result; resolves with `undefined` otherwise.
   * An error of the method reaches the caller (the scheduler logs it).
   */
  async fire(metadata: OncePerTickMetadata, run: () => unknown): Promise<unknown> {
    const plan = this.plans.get(metadata);
    if (!plan || !this.store) {
      throw new Error(
        `@OncePerTick on ${metadata.handler}: its schedule is unknown to this app (the start-up check saw no such method on a provider Nest created)`,
      );
    }
    if (this.closing) return undefined;
    const store = this.store;
    const { name, handler } = metadata;
    const tick = plan.schedule.tickAt(Date.now());
    const owner = randomUUID();
    let claim;
    try {
      claim = await store.claim({ name, tick, owner, leaseMs: plan.leaseMs, maxAheadMs: plan.maxClockSkewMs });
    } catch (error) {
      this.skipped(metadata, tick, 'backend_error', `: ${(error as Error)?.message ?? error}`);
      return undefined;
    }
    if (!claim.claimed) {
      this.skipped(
        metadata,
        tick,
        claim.reason,
        claim.reason === 'clock_ahead' ? ` (the backend's clock reads ${new Date(claim.backendNow).toISOString()})` : '',
      );
      return undefined;
    }
    this.warnedAhead.delete(name);
    this.metrics?.ran(name);
    const tickRun = new TickRun(store, name, owner, plan.leaseMs, (problem) =>
      this.logger.warn(`@OncePerTick on ${handler}: the run of tick ${new Date(tick).toISOString()} (${name}): ${problem}`),
    );
    const running = (async () => {
      try {
        return await run();
      } finally {
        await tickRun
          .finish()
          .catch((error: unknown) =>
            this.logger.warn(
              `@OncePerTick on ${handler}: the end of the run of tick ${new Date(tick).toISOString()} was not recorded (${(error as Error)?.message ?? error}); the next tick waits for its lease`,
            ),
          );
      }
    })();
    this.inFlight.add(running);
    try {
      return await running;
    } finally {
      this.inFlight.delete(running);
    }
  }

  /** No new runs; the running ones get up to `shutdownGraceMs` to finish (and record it) while the backend is still open. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (!this.inFlight.size) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.options.shutdownGraceMs);
      timer.unref();
    });
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    clearTimeout(timer);
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.store?.close();
  }

  private skipped(metadata: OncePerTickMetadata, tick: number, reason: TickSkipReason, detail: string): void {
    this.metrics?.skip(metadata.name, reason);
    const message = `@OncePerTick on ${metadata.handler}: tick ${new Date(tick).toISOString()} (${metadata.name}) skipped: ${REASONS[reason]}${detail}`;
    if (reason === 'backend_error') return this.logger.warn(message);
    if (reason === 'clock_ahead' && !this.warnedAhead.has(metadata.name)) {
      this.warnedAhead.add(metadata.name);
      return this.logger.warn(message);
    }
    this.logger.debug(message);
  }

  /** Every `@OncePerTick` method of the app's providers and controllers (the function Nest's scheduler would call). */
  private findMethods(): Array<{ metadata: OncePerTickMetadata; method: object }> {
    const found: Array<{ metadata: OncePerTickMetadata; method: object }> = [];
    const seen = new Set<object>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance = wrapper.instance as object | undefined;
      const prototype =
        instance && typeof instance === 'object' ? Object.getPrototypeOf(instance) : (wrapper.metatype as Type | undefined)?.prototype;
      if (!prototype || seen.has(prototype)) continue;
      seen.add(prototype);
      const names = new Set<string>();
      for (let proto = prototype as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
        for (const name of Object.getOwnPropertyNames(proto)) {
          // The most derived definition is the one called.
          if (name === 'constructor' || names.has(name)) continue;
          names.add(name);
          const method = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
          if (typeof method !== 'function') continue;
          const metadata = this.accessor.oncePerTick(method);
          if (metadata) found.push({ metadata, method });
        }
      }
    }
    return found;
  }
}
