import { SerializedError } from '../../errors/serialized.error';

/** What was wrong with a request's idempotency key (or its `scope`). */
export type IdempotencyKeyProblem = 'missing' | 'empty' | 'too-long' | 'invalid';

/**
 * The request's idempotency key is missing where `required: true`, empty, too
 * long, or not a valid value; or the `scope` of `@Idempotent` found nothing.
 * HTTP: 400 problem details. `key` is the key form as written.
 */
export class IdempotencyKeyError extends SerializedError {
  override readonly name = 'IdempotencyKeyError';
  readonly problem: IdempotencyKeyProblem;
  /** What a client is told (no handler or infrastructure names). */
  readonly detail: string;

  constructor(key: string, problem: IdempotencyKeyProblem, detail: string, handler?: string) {
    super(`Idempotency key "${key}": ${detail}`, key, handler);
    this.problem = problem;
    this.detail = detail;
  }
}
