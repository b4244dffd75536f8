import type { OncePerTickMetadata, OncePerTickOptions } from '../metadata/once-per-tick-options.interface';
import { injectPropertyOnce } from '../metadata/property.injector';
import { ONCE_PER_TICK_METADATA, SERIALIZED_TICK_RUNNER } from '../serialized.constants';
import { assertOncePerTickOptions } from './once-per-tick-options.validator';
import { TickRunner } from './tick.runner';
import { wrapMethod } from '../metadata/method.wrapper';

/**
 * On a method that also carries `@Cron(…)`, `@Interval(…)` or `@Timeout(…)` of
 * `@nestjs/schedule`: when every instance of the app fires the same tick, exactly
 * one of them runs the method for it.
 *
 * ```ts
 * @Cron('0 0 3 * * *')
 * @OncePerTick()
 * async sendNightlyDigest(): Promise<void> { ... }
 * ```
 *
 * A tick is identified by its scheduled time (the cron expression's fire time; an
 * interval's or timeout's epoch-aligned multiple of its period), never by when an
 * instance woke, and claimed in the module's backend only if it is later than the
 * last claimed tick of the same `name` and no run of that name is still running
 * anywhere: so it runs once however short the method is and however far apart the
 * instances wake, and a tick that fires while the previous run still runs is
 * skipped (logged at debug level, counted in `serialized.tick.skipped`).
 *
 * A call of the method is a firing of its schedule: it runs the method only if it
 * claims the tick due at that moment, and resolves with `undefined` when it does not.
 * It works in either order with the schedule decorator; without one, start-up fails
 * naming `Class#method`. Options are checked here: a bad one throws naming it.
 * See docs/scheduling.md.
 */
export function OncePerTick(options: OncePerTickOptions = {}): MethodDecorator {
  return ((target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor): PropertyDescriptor => {
    const original = descriptor.value as (...args: unknown[]) => unknown;
    const className = target.constructor.name;
    const handler = `${className}#${String(propertyKey)}`;
    if (typeof original !== 'function') throw new TypeError(`@OncePerTick on ${handler}: only methods can be scheduled`);
    assertOncePerTickOptions(options, handler);
    const metadata: OncePerTickMetadata = { options: { ...options }, handler, name: options.name ?? `${className}.${String(propertyKey)}` };

    const oncePerTick = function (this: Record<symbol, TickRunner | undefined>, ...args: unknown[]): Promise<unknown> {
      const runner = this?.[SERIALIZED_TICK_RUNNER];
      if (!runner) {
        return Promise.reject(
          new Error(
            `@OncePerTick on ${handler}: no TickRunner on this instance. Import SerializedModule.forRoot() in the app module and let Nest create ${className}.`,
          ),
        );
      }
      return runner.fire(metadata, () => original.apply(this, args));
    };
    wrapMethod(descriptor, original, oncePerTick, ONCE_PER_TICK_METADATA, metadata);
    // Nest sets this property when it creates the instance: each app uses its own runner.
    injectPropertyOnce(target, SERIALIZED_TICK_RUNNER, TickRunner);
    return descriptor;
  }) as MethodDecorator;
}
