/**
 * The floor: the queue place of the first waiter of another process known to a
 * tenure (models/VOCABULARY.md). Local hand-offs in strict mode stay ahead of it.
 * One encoding in TypeScript, so that `place < floor` reads as "ahead of every
 * remote waiter known": NONE (nobody of another process waits) is above every
 * place, UNKNOWN (not known yet) below every place. The scripts say 0 and -1;
 * {@link floorOf} decodes them at the gateways.
 */
export const Floor = {
  NONE: Infinity,
  UNKNOWN: -Infinity,
} as const;

/** A queue place, {@link Floor.NONE} or {@link Floor.UNKNOWN}. */
export type Floor = number;

/** The floor a script replied (0: none; negative: unknown; else a place). */
export function floorOf(wire: unknown): Floor {
  const place = Number(wire);
  return place === 0 ? Floor.NONE : place < 0 ? Floor.UNKNOWN : place;
}
