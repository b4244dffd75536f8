import { OptionRowsValidator, throwIfProblems } from '../config/option-rows.validator';
import { SERIALIZED_OPTIONS_SCHEMA as S, type OptionSpec } from '../config/serialized-options.schema';
import type { OncePerTickOptions } from '../metadata/once-per-tick-options.interface';
import { ONCE_PER_TICK_DEFAULTS as D } from './once-per-tick.defaults';

/** `@OncePerTick`'s options, in the options schema's terms; `leaseMs` is the module option's row. */
const ONCE_PER_TICK_OPTIONS = new OptionRowsValidator<keyof OncePerTickOptions>(
  [
    [
      'name',
      {
        type: 'text',
        pattern: new RegExp(`^(?=[\\s\\S]*\\S)[\\s\\S]{1,${D.maxNameLength}}$`),
        format: `a string of 1 to ${D.maxNameLength} characters, not only white space`,
        defaultText: '<Class>.<method>',
        meaning: 'the record that one instance per tick claims',
      },
    ],
    [
      'maxClockSkewMs',
      {
        type: 'integer',
        unit: 'ms',
        default: D.maxClockSkewMs,
        min: 0,
        max: D.maxClockSkewLimitMs,
        meaning: 'how far apart the clocks of the instances may be',
      },
    ],
    ['leaseMs', S.leaseMs satisfies OptionSpec],
  ],
  true,
);

/**
 * Checks `@OncePerTick`'s options when the decorator is applied (class definition
 * time), with the options schema's validator.
 *
 * @throws SerializedConfigError naming `Class#method`, each bad or unknown option and what it accepts
 */
export function assertOncePerTickOptions(options: OncePerTickOptions, handler: string): void {
  throwIfProblems(ONCE_PER_TICK_OPTIONS.problems(options), `@OncePerTick on ${handler}`);
}
