import { SERIALIZED_DEFAULTS } from '../serialized.defaults';
import { SerializedError } from './serialized.error';

/**
 * What was wrong with the value found for a serialization key:
 * - `missing`: nothing there, or `null` / `''`;
 * - `not-scalar`: not a string or a (finite) number;
 * - `too-long`: longer than `SERIALIZED_DEFAULTS.maxKeyLength` characters;
 * - `blank`: only white space;
 * - `unencodable`: a lone surrogate, which UTF-8 (and so Redis and PostgreSQL) cannot carry;
 * - `too-many`: a key set (`@Serialized([...])`, `run([...])`) of more than
 *   `SERIALIZED_DEFAULTS.maxKeysPerSet` (16) distinct keys.
 */
export type SerializationKeyProblem = 'missing' | 'not-scalar' | 'too-long' | 'blank' | 'unencodable' | 'too-many';

/**
 * The value a handler is serialized on cannot name a lock: missing, empty, only
 * white space, not a scalar (string or number), too long, or not encodable the
 * same way by every backend. `key` is the key expression as written (`user.id`),
 * `lookedIn` where it was looked for. HTTP: 400.
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
      return `Serialization key "${key}" is longer than ${SERIALIZED_DEFAULTS.maxKeyLength} characters${where}`;
    case 'blank':
      return `Serialization key "${key}" is only white space${where}`;
    case 'unencodable':
      return `Serialization key "${key}" is not well-formed Unicode: it has a lone surrogate, which the lock backends cannot store as it is${where}`;
    case 'too-many':
      return `Serialization key "${key}" names more than ${SERIALIZED_DEFAULTS.maxKeysPerSet} distinct keys${where}`;
  }
}
