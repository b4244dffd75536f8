import { redactUrls } from '../internal/secrets.redact';

/**
 * Invalid module options or environment variables. Thrown while the module starts,
 * so a bad value stops start-up; the message lists every problem at once. A
 * password in a URL (or a `password=` setting) is never part of it: each problem
 * is redacted on the way in, whoever wrote it.
 */
export class SerializedConfigError extends Error {
  override readonly name = 'SerializedConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    const redacted = problems.map(redactUrls);
    super(`nestjs-serialized: invalid configuration:\n  - ${redacted.join('\n  - ')}`);
    this.problems = redacted;
  }
}
