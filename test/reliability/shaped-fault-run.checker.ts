/**
 * The checker of the shaped fault run (docs/semantics.md, "Several holders of one
 * key"): what the detector logged — every section's entry with its shape, and every
 * entry made while others were inside — judged against the shape of its key.
 *
 * - Group keys (every caller `concurrency: limit`): never more than `limit` holders
 *   inside at once that were not told they lost their place; and `limit` of them
 *   together at some point (or the run did not exercise the cap).
 * - Reader/writer keys (readers `shared: true`, writers plain): no writer beside
 *   another holder nobody told, no reader beside such a writer; readers together at
 *   some point. Among the holders nobody told, a writer's token is above every earlier
 *   entry's of its key and a reader's above every earlier writer's (grant order).
 * - Every key: no fencing token entered twice.
 *
 * A holder is told when its signal aborted or it read `lock.lost` (the detector's
 * `lost` set), or when the run killed its process (it never left).
 */

/** A section's entry as the worker logs it (fault-loop.worker.ts): key, token, member, time, shape. */
export interface ShapedEntry {
  k: string;
  t: string;
  m: string;
  at: number;
  s?: 'g' | 'r' | 'w';
}

/** An entry made while others were inside (the detector's overlaps list). */
export interface ShapedOverlap {
  key: string;
  member: string;
  others: string[];
}

/** What the shaped checker found (all under `shape` of a fault-run result). */
export interface ShapeVerdict {
  limit: number;
  groupKeys: number;
  /** Sections per shape. */
  groupSections: number;
  readerSections: number;
  writerSections: number;
  /** The most group-key holders nobody told seen inside at once (must reach `limit`, never pass it). */
  mostUntoldGroupHolders: number;
  /** Entries on a group key that made more than `limit` holders nobody told. */
  groupOverCap: number;
  /** Entries of a reader beside another reader only (readers together: must happen). */
  readersTogether: number;
  /** Entries on a reader/writer key beside a holder of the other kind (or a writer beside a writer) nobody told. */
  writerBesideOthers: number;
  /** Tokens entered twice on one key. */
  duplicateTokens: number;
  /** Entries out of grant order among holders nobody told, on reader/writer keys. */
  orderViolations: number;
}

/** The counts the fault run reports, from the shaped checker (what replaces the one-holder checker's). */
export interface ShapedJudgement {
  shape: ShapeVerdict;
  overlapsTold: number;
  unexplainedOverlaps: number;
  holdersNeverTold: number;
  fencingViolations: number;
  fencingDetails: string[];
  /** Places taken from holders while they were inside (a holder of the other kind, or one past the cap, entered). */
  holdersOvertaken: number;
  /** Of those, places whose holder left without having read the loss. */
  holdersLeftUntold: number;
  /** The first of them. */
  leftUntoldDetails: string[];
  /** The first unexplained overlaps: who entered beside whom, with their entry times and whether each was ever told. */
  overlapDetails: string[];
}

/**
 * Judges a shaped run. `excused(id)`: the holder `key:member` was told (at any time) or
 * killed; `toldBeforeLeaving(id)`: it knew of its loss as it left, or was killed.
 * `groupKeys`: the keys whose callers pass `concurrency: limit`.
 */
export function judgeShaped(
  entries: ShapedEntry[],
  overlaps: ShapedOverlap[],
  excused: (id: string) => boolean,
  toldBeforeLeaving: (id: string) => boolean,
  groupKeys: ReadonlySet<string>,
  limit: number,
  when: (at: number | undefined) => string = String,
): ShapedJudgement {
  const entryAt = new Map(entries.map((e) => [`${e.k}:${e.m}`, e.at]));
  const shapeOf = new Map(entries.map((e) => [`${e.k}:${e.m}`, e.s]));
  const tokenOf = (member: string) => BigInt(member.slice(member.indexOf(':') + 1));
  const shape: ShapeVerdict = {
    limit,
    groupKeys: groupKeys.size,
    groupSections: entries.filter((e) => e.s === 'g').length,
    readerSections: entries.filter((e) => e.s === 'r').length,
    writerSections: entries.filter((e) => e.s === 'w').length,
    mostUntoldGroupHolders: entries.some((e) => e.s === 'g') ? 1 : 0,
    groupOverCap: 0,
    readersTogether: 0,
    writerBesideOthers: 0,
    duplicateTokens: 0,
    orderViolations: 0,
  };
  let overlapsTold = 0;
  let unexplainedOverlaps = 0;
  const untold = new Set<string>();
  // Only holders granted before the newcomer were overtaken by it (an older token entering late is a stalled holder starting late).
  const older = (member: string, others: string[]) => others.filter((o) => tokenOf(o) < tokenOf(member));
  const overtaken = new Set<string>();
  let holdersOvertaken = 0;
  const leftUntoldDetails: string[] = [];
  let holdersLeftUntold = 0;
  const overlapDetails: string[] = [];
  const describe = (key: string, member: string, others: string[]) => {
    if (overlapDetails.length >= 5) return;
    const who = (m: string) => `${m} (entered ${when(entryAt.get(`${key}:${m}`))}${excused(`${key}:${m}`) ? ', told' : ', never told'})`;
    overlapDetails.push(`${key}: ${who(member)} beside ${others.map(who).join(', ')}`);
  };
  const leftUntold = (detail: string, n: number) => {
    holdersLeftUntold += n;
    if (leftUntoldDetails.length < 5) leftUntoldDetails.push(detail);
  };
  for (const overlap of overlaps) {
    const { key, member, others } = overlap;
    const notTold = others.filter((other) => !excused(`${key}:${other}`));
    // A newcomer that knew of its loss before it left (or was killed) is a holder whose place
    // had gone — a stalled holder entering late, its lease run out before it came in — and
    // does not count; one that never knew while inside does.
    const newcomerUntold = toldBeforeLeaving(`${key}:${member}`) ? 0 : 1;
    if (groupKeys.has(key)) {
      const together = newcomerUntold + notTold.length;
      shape.mostUntoldGroupHolders = Math.max(shape.mostUntoldGroupHolders, together);
      if (together > limit) {
        shape.groupOverCap++;
        unexplainedOverlaps++;
        describe(key, member, others);
        for (const other of notTold) untold.add(`${key}:${other}`);
      } else if (1 + others.length > limit) overlapsTold++;
      // More than `limit` inside: the newcomer took the places of as many of the older holders, which ones the
      // run cannot tell; at least that many of them must have known of their loss as they left.
      const places = Math.min(1 + others.length - limit, older(member, others).length);
      if (places > 0) {
        holdersOvertaken += places;
        const knew = older(member, others).filter((o) => toldBeforeLeaving(`${key}:${o}`)).length;
        if (knew < places)
          leftUntold(
            `${key}: ${member} entered at ${when(entryAt.get(`${key}:${member}`))} beside ${others.map((o) => `${o} (entered ${when(entryAt.get(`${key}:${o}`))}${excused(`${key}:${o}`) ? ', told after it left' : ''})`).join(', ')}: ${places - knew} of the older left untold`,
            places - knew,
          );
      }
      continue;
    }
    const mine = shapeOf.get(`${key}:${member}`);
    const conflicting = mine === 'r' ? others.filter((other) => shapeOf.get(`${key}:${other}`) !== 'r') : others;
    if (conflicting.length === 0) {
      shape.readersTogether++;
      continue;
    }
    for (const other of older(member, conflicting)) {
      const id = `${key}:${other}`;
      if (overtaken.has(id)) continue;
      overtaken.add(id);
      holdersOvertaken++;
      if (!toldBeforeLeaving(id))
        leftUntold(
          `${id} (${shapeOf.get(id)}, entered ${when(entryAt.get(id))}; ${shapeOf.get(`${key}:${member}`)} ${member} entered beside it ${when(entryAt.get(`${key}:${member}`))}${excused(id) ? '; told after it left' : '; never told'})`,
          1,
        );
    }
    const conflictingUntold = conflicting.filter((other) => !excused(`${key}:${other}`));
    if (conflictingUntold.length === 0 || newcomerUntold === 0) overlapsTold++;
    else {
      unexplainedOverlaps++;
      shape.writerBesideOthers++;
      describe(key, member, others);
      for (const other of conflictingUntold) untold.add(`${key}:${other}`);
    }
  }
  const fencingDetails: string[] = [];
  const seen = new Map<string, ShapedEntry>();
  const highestAny = new Map<string, ShapedEntry>();
  const highestWriter = new Map<string, ShapedEntry>();
  for (const entry of entries) {
    const previous = seen.get(`${entry.k}:${entry.t}`);
    if (previous) {
      shape.duplicateTokens++;
      if (fencingDetails.length < 5) fencingDetails.push(`${entry.k}: token ${entry.t} entered by ${previous.m} and ${entry.m}`);
    }
    seen.set(`${entry.k}:${entry.t}`, entry);
    if (groupKeys.has(entry.k) || excused(`${entry.k}:${entry.m}`)) continue;
    const token = BigInt(entry.t);
    const above = entry.s === 'w' ? highestAny.get(entry.k) : highestWriter.get(entry.k);
    if (above !== undefined && token <= BigInt(above.t)) {
      shape.orderViolations++;
      if (fencingDetails.length < 5)
        fencingDetails.push(`${entry.k}: ${entry.s} ${entry.m} at ${entry.at} after ${above.s} ${above.m} at ${above.at}`);
      continue;
    }
    if (!highestAny.has(entry.k) || token > BigInt(highestAny.get(entry.k)!.t)) highestAny.set(entry.k, entry);
    if (entry.s === 'w') highestWriter.set(entry.k, entry);
  }
  return {
    shape,
    overlapsTold,
    unexplainedOverlaps,
    holdersNeverTold: untold.size,
    fencingViolations: shape.duplicateTokens + shape.orderViolations,
    fencingDetails,
    holdersOvertaken,
    holdersLeftUntold,
    leftUntoldDetails,
    overlapDetails,
  };
}

/** The shape's own violations (each also counted among the fault run's unexplained overlaps or fencing violations). */
export function shapeViolations(shape: ShapeVerdict): string[] {
  const problems: string[] = [];
  if (shape.groupOverCap) problems.push(`${shape.groupOverCap} entries past the group cap of ${shape.limit}`);
  if (shape.writerBesideOthers)
    problems.push(`${shape.writerBesideOthers} entries of a writer beside another holder, or a reader beside a writer`);
  if (shape.duplicateTokens) problems.push(`${shape.duplicateTokens} tokens entered twice`);
  if (shape.orderViolations) problems.push(`${shape.orderViolations} entries out of grant order`);
  return problems;
}

/** What a shaped run must have shown, or it did not exercise the shapes: the cap reached, readers together. */
export function shapeUnexercised(shape: ShapeVerdict): string[] {
  const problems: string[] = [];
  if (shape.mostUntoldGroupHolders < shape.limit)
    problems.push(`the group cap was never reached (at most ${shape.mostUntoldGroupHolders} of ${shape.limit} together)`);
  if (shape.readersTogether === 0) problems.push('readers were never inside together');
  return problems;
}
