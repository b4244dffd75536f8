import { SerializedError } from './serialized.error';

/** What was wrong with the value found for a serialization key. */
export type SerializationKeyProblem = 'missing' | 'not-scalar' | 'too-long';

/**
 * The value a handler is serialized on is missing, empty, not a scalar (string or
 * number) or longer than 512 characters. `key` is the key expression as written
 * (`user.id`), `lookedIn` where it was looked for. HTTP: 400.
 */
export class SerializationKeyError extends SerializedError {
  override readonly name = 'SerializationKeyError';
  readonly problem: SerializationKeyProblem;
  readonly lookedIn: readonly string[];

  constructor(key: string, problem: SerializationKeyProblem, lookedIn: readonly string[], handler?: string) {
    super(describe(key, problem, lookedIn), key, handler);
    this.problem = problem;
    this.lookedIn = lookedIn;
  }
}

function describe(key: string, problem: SerializationKeyProblem, lookedIn: readonly string[]): string {
  const where = lookedIn.length ? ` (looked in ${lookedIn.join(', ')})` : '';
  switch (problem) {
    case 'missing':
      return `Serialization key "${key}" is missing or empty${where}`;
    case 'not-scalar':
      return `Serialization key "${key}" must be a string or a number${where}`;
    case 'too-long':
      return `Serialization key "${key}" is longer than 512 characters${where}`;
  }
}
