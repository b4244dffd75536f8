import { percentiles } from './stats';

/**
 * Critical sections of one hot key, as [start, end] pairs on one clock. The lock
 * serializes them, so sorted by start each one begins after its predecessor ended;
 * the gap between them is the hand-off latency: from the holder's release call
 * (its critical section's end) to the next holder's critical-section start.
 */
export class CriticalSections {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];

  record(start: number, end: number): void {
    this.starts.push(start);
    this.ends.push(end);
  }

  get count(): number {
    return this.starts.length;
  }

  /** Flat [start, end, start, end, …] for sending over IPC. */
  toFlat(): number[] {
    const flat = new Array<number>(this.starts.length * 2);
    for (let i = 0; i < this.starts.length; i++) {
      flat[2 * i] = this.starts[i];
      flat[2 * i + 1] = this.ends[i];
    }
    return flat;
  }

  static fromFlat(...flats: number[][]): CriticalSections {
    const pairs: Array<[number, number]> = [];
    for (const flat of flats) for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
    pairs.sort((a, b) => a[0] - b[0]);
    const sections = new CriticalSections();
    for (const [start, end] of pairs) sections.record(start, end);
    return sections;
  }

  /**
   * Hand-offs whose critical section started inside [from, to): their rate, and
   * the latency percentiles of those that had a predecessor. A negative gap beyond
   * `overlapToleranceMs` means two holders at once: it is counted, never hidden.
   */
  analyse(from: number, to: number, overlapToleranceMs = 0.05): HandoffStats {
    const gaps: number[] = [];
    let count = 0;
    let overlaps = 0;
    for (let i = 0; i < this.starts.length; i++) {
      const start = this.starts[i];
      if (start < from || start >= to) continue;
      count++;
      if (i === 0) continue;
      const gap = start - this.ends[i - 1];
      if (gap < -overlapToleranceMs) overlaps++;
      gaps.push(Math.max(0, gap));
    }
    const [p50, p99] = percentiles(gaps, [50, 99]);
    return { handoffsPerSec: count / ((to - from) / 1000), p50, p99, count, overlaps };
  }
}

export interface HandoffStats {
  handoffsPerSec: number;
  /** Hand-off latency, ms. */
  p50: number;
  p99: number;
  count: number;
  /** Critical sections that started before their predecessor ended (mutual exclusion broken). */
  overlaps: number;
}
