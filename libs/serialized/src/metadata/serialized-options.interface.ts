import type { HandOffMode } from '../acquire-options.interface';
import type { SerializedMode } from '../lock.service';
import type { ParsedSerializedKey, SerializedKey, SerializationKeyTransform } from '../key/serialization-key.parser';

/**
 * Options of `@Serialized(key, options)`; unset fields fall back to the module's options.
 * They are checked when the decorator is applied (a bad one stops start-up, naming
 * the option and `Class#method`); numbers may be as large as any safe integer.
 */
export interface SerializedOptions {
  /**
   * Namespace of the lock key `<keyPrefix>:<scope>:<value>`. Defaults to
   * `<Class>.<method>`; give handlers that must exclude each other (or a job and
   * an HTTP handler) the same explicit scope.
   */
  scope?: string;
  /** `wait` (default): queue up to `waitTimeoutMs`. `reject`: 429 / `LockBusyError` at once when busy. */
  mode?: SerializedMode;
  /** Longest wait in `wait` mode, in ms (an integer, however large; default: the module's). */
  waitTimeoutMs?: number;
  /** Lease of the lock, in ms (an integer, however large; default: the module's). */
  leaseMs?: number;
  /** Most waiters of one key in this process (an integer, or `Infinity`); beyond it `LockBusyError` (429). */
  maxPending?: number;
  /**
   * `false`: this handler never joins an enclosing holder of its key and nothing it
   * spawns joins it — it queues like anyone else (default: the module's `reentrant`,
   * `true`). See `RunOptions.reentrant` and docs/semantics.md.
   */
  reentrant?: boolean;
  /** PostgreSQL local hand-off of this handler's lock, `'strict'` or `'cohort'` (default: the module's `postgres.handoff`). */
  handoff?: HandOffMode;
  /**
   * Most requests of one key inside the handler at once (an integer 1–1000, default
   * 1), let in in arrival order: a per-tenant cap. Not with `shared`.
   */
  concurrency?: number;
  /**
   * Hold the key together with other `shared` handlers of it (readers); handlers
   * without it hold it alone (writers), and a reader arriving behind a waiting
   * writer waits for it. Not with `concurrency` > 1.
   */
  shared?: boolean;
  /**
   * `true` or `{ connectionName }`: the handler runs inside a transaction of the app's
   * `TransactionHost` (`@nestjs-cls/transactional`) that holds `pg_advisory_xact_lock` on
   * the key; COMMIT or ROLLBACK releases it (PostgreSQL; docs/transactions.md).
   */
  transaction?: boolean | { readonly connectionName?: string };
  /**
   * Canonicalizes the value before it names a lock, so that requests for one
   * thing written differently share it: with `transform: Number`, `/users/42`
   * and `/users/042` are one lock. What it returns is checked like any key value
   * (`NaN`, `undefined` or `''` is a 400).
   */
  transform?: SerializationKeyTransform;
}

/** What `@Serialized` stores under `serialized:options`. */
export interface SerializedMetadata {
  readonly key: SerializedKey;
  readonly parsedKey: ParsedSerializedKey;
  readonly options: Readonly<SerializedOptions>;
  /** Scope when `options.scope` is unset: `<Class>.<method>` (or `<Class>` on a class). */
  readonly defaultScope: string;
}
