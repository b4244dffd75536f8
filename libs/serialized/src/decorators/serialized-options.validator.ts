import { callOptionProblems } from '../config/acquire-options.validator';
import { showValue } from '../config/serialized-options.schema';
import { hasLoneSurrogate } from '../key/lock-key.composer';
import type { SerializedOptions } from '../metadata/serialized-options.interface';
import { concurrencyInTransactionProblem, transactionOptionProblem } from '../transaction/transaction-options.interface';

/** The names `@Serialized` accepts in its options (`SerializedOptions`), in the order its TSDoc lists them. */
const ACCEPTED: readonly (keyof SerializedOptions)[] = [
  'scope',
  'mode',
  'waitTimeoutMs',
  'leaseMs',
  'maxPending',
  'reentrant',
  'handoff',
  'concurrency',
  'shared',
  'transaction',
  'transform',
];

/**
 * Checks `@Serialized` options when the decorator is applied, so a bad one stops
 * start-up naming the option and `Class#method` (`where`). Numbers follow the
 * per-call bounds of the options table, the same check `LockService.run` and the
 * providers make.
 */
export function assertSerializedOptions(options: SerializedOptions, where: string): void {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`@Serialized on ${where}: options must be an object, got ${showValue(options)}`);
  }
  const problems = callOptionProblems(options);
  const scope: unknown = options.scope;
  if (scope !== undefined && (typeof scope !== 'string' || scope.trim() === '' || hasLoneSurrogate(scope))) {
    problems.push(
      `scope=${showValue(scope)} is invalid: accepts a string that is not empty, not only white space, and well-formed Unicode`,
    );
  }
  if (options.transform !== undefined && typeof options.transform !== 'function') {
    problems.push(`transform=${showValue(options.transform)} is invalid: accepts a function (value: string) => string | number`);
  }
  const transaction = transactionOptionProblem(options.transaction);
  if (transaction) problems.push(transaction);
  else if (options.transaction && typeof options.concurrency === 'number' && options.concurrency > 1)
    problems.push(concurrencyInTransactionProblem(options.concurrency));
  // A name it does not know would be ignored (a typo, or an option of another version): refused, listing those it accepts.
  for (const name of Object.keys(options)) {
    if (!(ACCEPTED as readonly string[]).includes(name)) problems.push(`unknown option ${name} (accepted: ${ACCEPTED.join(', ')})`);
  }
  if (problems.length) throw new TypeError(`@Serialized on ${where}: ${problems.join('; ')}`);
}
