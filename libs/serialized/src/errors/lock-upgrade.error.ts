/**
 * A call asked to hold a key alone while its async context holds that key
 * `shared` (an upgrade): it would wait for the other readers, among them its own
 * context, and never get in, so it fails at once instead (docs/semantics.md,
 * "Several holders of one key"). A programming error, not a client one: take the
 * key alone from the start, or run the writing part outside the shared section.
 */
export class LockUpgradeError extends Error {
  override readonly name = 'LockUpgradeError';

  constructor(
    /** The key held shared by the enclosing section. */
    readonly key: string,
    handler?: string,
  ) {
    super(
      `Cannot take lock "${key}" alone while this async context holds it shared: an upgrade from shared to alone ` +
        `would wait for itself. Take the key without shared from the start${handler ? ` (in ${handler})` : ''}`,
    );
  }
}
