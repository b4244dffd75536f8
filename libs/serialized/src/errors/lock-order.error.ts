/**
 * A call asked for a key set while its async context already held some of the
 * keys, and the rest cannot be taken in the canonical order (every held key
 * sorting before every missing one): waiting for them could deadlock against a
 * call that takes the same keys in that order, so the call fails at once instead
 * (docs/semantics.md, "Several keys at once"). A programming error, not a client
 * one: take the whole set in one call, at the outermost level.
 */
export class LockOrderError extends Error {
  override readonly name = 'LockOrderError';

  constructor(
    /** The keys the context holds already. */
    readonly held: readonly string[],
    /** The keys still to take; one of them sorts before a held one. */
    readonly missing: readonly string[],
    handler?: string,
  ) {
    super(
      `Cannot take lock(s) ${missing.map((k) => `"${k}"`).join(', ')} while holding ${held.map((k) => `"${k}"`).join(', ')}: ` +
        'keys of a set are taken in one order (by lock key), and a missing key sorts before a held one, which could deadlock. ' +
        `Take the whole set in one call${handler ? ` (in ${handler})` : ''}`,
    );
  }
}
