/**
 * Invalid module options or environment variables. Thrown while the module starts,
 * so a bad value stops start-up; the message lists every problem at once.
 */
export class SerializedConfigError extends Error {
  override readonly name = 'SerializedConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`nestjs-serialized: invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}
