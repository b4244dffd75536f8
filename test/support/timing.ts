/** Small helpers for tests that assert order and overlap, never speed. */
// Unref'd: a sleep raced against an outcome (`Promise.race([outcome, sleep(5000)])`) must not
// keep jest's worker alive after the file; the worker's IPC channel keeps it running meanwhile.
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** Records how many callers are inside a critical section at once. */
export class OverlapProbe {
  private inside = 0;
  maxInside = 0;
  entered = 0;

  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    this.inside++;
    this.entered++;
    this.maxInside = Math.max(this.maxInside, this.inside);
    try {
      return await fn();
    } finally {
      this.inside--;
    }
  }
}

/** Resolves when `predicate` holds, polling every 5 ms; rejects after `timeoutMs`. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

/** A promise with its resolve function outside. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export const uniqueId = (prefix: string): string =>
  `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
