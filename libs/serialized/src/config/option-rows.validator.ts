import { IsBoolean, IsIn, IsInt, Matches, Max, Min, ValidateBy, ValidateIf, validateSync } from 'class-validator';
import { acceptsOf, optionProblem, type OptionScope, type OptionSpec } from './option-spec.definition';
import { SerializedConfigError } from './serialized-config.error';

/** One row to check: the property it reads, the rule it follows, and where the value comes from. */
export type OptionRow<Name extends string = string> = readonly [name: Name, spec: OptionSpec, scope?: OptionScope];

/**
 * class-validator's decorators for one row of the options schema. This is the only
 * place a row's type, bounds, choices and pattern become a check: module options,
 * environment variables, provider constructors and decorator options all go
 * through it.
 */
function rulesOf(spec: OptionSpec, scope: OptionScope): PropertyDecorator[] {
  switch (spec.type) {
    case 'integer': {
      if (scope === 'call' && spec.perCall) {
        const infinity = spec.perCall.infinity === true;
        return [ValidateIf((_, value) => !(infinity && value === Infinity)), IsInt(), Min(spec.perCall.min), Max(Number.MAX_SAFE_INTEGER)];
      }
      return [IsInt(), Min(spec.min), Max(spec.max)];
    }
    case 'choice':
      return [IsIn([...spec.values])];
    case 'boolean':
      return [IsBoolean()];
    case 'text':
      return [Matches(spec.pattern)];
    case 'code':
      return [ValidateBy({ name: 'schemaCheck', validator: { validate: (value) => spec.check(value) } })];
  }
}

/**
 * Checks values against rows of the options schema with class-validator. Each
 * instance decorates a class of its own, once; `invalid` then costs one
 * `validateSync`. A value that is `undefined` is not given, so never invalid.
 */
export class OptionRowsValidator<Name extends string> {
  private readonly target: new () => Record<string, unknown>;
  private readonly specs: ReadonlyMap<Name, { readonly spec: OptionSpec; readonly scope: OptionScope }>;

  /** `strict`: a property that is not a row is reported by {@link unknown}. */
  constructor(
    rows: readonly OptionRow<Name>[],
    private readonly strict = false,
  ) {
    this.target = class OptionValues {
      [name: string]: unknown;
    };
    this.specs = new Map(rows.map(([name, spec, scope = 'module']) => [name, { spec, scope }]));
    for (const [name, { spec, scope }] of this.specs) {
      const decorators = [ValidateIf((_, value) => value !== undefined), ...rulesOf(spec, scope)];
      for (const decorate of decorators) decorate(this.target.prototype, name);
    }
  }

  /** The names of the given values that break their row, in row order; with `strict`, unknown names last. */
  invalid(values: Partial<Record<Name, unknown>>): string[] {
    const checked = Object.assign(new this.target(), values);
    const errors = validateSync(checked, {
      forbidUnknownValues: false,
      whitelist: this.strict,
      forbidNonWhitelisted: this.strict,
    });
    const bad = new Set(errors.map((error) => error.property));
    return [...[...this.specs.keys()].filter((name) => bad.has(name)), ...[...bad].filter((name) => !this.specs.has(name as Name))];
  }

  /** Whether `name` is a row of this validator. */
  has(name: string): name is Name {
    return this.specs.has(name as Name);
  }

  /** What a row accepts, as problem lines say it. */
  accepts(name: Name): string {
    const { spec, scope } = this.specs.get(name)!;
    return acceptsOf(spec, scope);
  }

  /** The names of the rows, in order. */
  names(): Name[] {
    return [...this.specs.keys()];
  }

  /**
   * One problem line per invalid value: `<label>=<value> is invalid: accepts <what>`;
   * with `strict`, `unknown option <name> (accepted: …)` for a name that is not a row.
   */
  problems(values: Partial<Record<Name, unknown>>, label: (name: Name) => string = (name) => name): string[] {
    return this.invalid(values).map((name) =>
      this.has(name)
        ? optionProblem(label(name), values[name], this.accepts(name))
        : `unknown option ${name} (accepted: ${this.names().join(', ')})`,
    );
  }
}

/** Throws one `SerializedConfigError` listing `problems`, each prefixed with `where`, when there are any. */
export function throwIfProblems(problems: readonly string[], where?: string): void {
  if (problems.length) throw new SerializedConfigError(where === undefined ? problems : problems.map((problem) => `${where}: ${problem}`));
}
