/**
 * Scenario 5, in a process of its own started with `--expose-gc`: what a lock
 * library keeps on the heap (a) after N distinct keys were locked and released,
 * and (b) per key while many keys are held at once.
 */
import '../lib/quiet-logger';
import { serveRequests, type Message } from '../lib/worker-process';
import { findSubject } from '../subjects';
import type { LockSubject } from '../subjects/subject';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('memory.worker needs --expose-gc');

async function settledHeap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc!();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

const noop = (): void => undefined;

/** Locks and releases `keys` distinct keys, `batch` at a time. */
async function churn(subject: LockSubject, prefix: string, keys: number, batch: number): Promise<void> {
  for (let base = 0; base < keys; base += batch) {
    const calls: Promise<void>[] = [];
    for (let i = base; i < Math.min(keys, base + batch); i++) calls.push(subject.withLock(prefix + i, noop));
    await Promise.all(calls);
  }
}

/** Holds `count` distinct keys at once; returns the heap while held, then releases them. */
async function holdMany(subject: LockSubject, prefix: string, count: number): Promise<number> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let holding = 0;
  let allHeld!: () => void;
  const held = new Promise<void>((resolve) => (allHeld = resolve));
  const calls: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    calls.push(
      subject.withLock(prefix + i, () => {
        if (++holding === count) allHeld();
        return gate;
      }),
    );
  }
  await held;
  const heap = await settledHeap();
  open();
  await Promise.all(calls);
  return heap;
}

/** No lock at all: what the harness itself holds per key (subtracted from every subject). */
const control: LockSubject = {
  withLock: async (_key, fn) => fn(),
  close: async () => undefined,
};

serveRequests(async (message: Message): Promise<Message | undefined> => {
  if (message.type !== 'measure') throw new Error(`unknown request ${message.type}`);
  const { subject: id, keys, heldKeys, batch } = message as unknown as { subject: string; keys: number; heldKeys: number; batch: number };
  const subject =
    id === 'control' ? control : await findSubject('memory', id).open({ redisUrl: '', databaseUrl: '', mysqlUrl: '', prefix: '' });
  // Warm-up: compile the hot paths before the baseline, so JIT code is not counted as retained.
  await churn(subject, 'w', 20_000, batch);
  await holdMany(subject, 'wh', 2000);
  const baseline = await settledHeap();
  const started = Date.now();
  await churn(subject, 'k', keys, batch);
  const churnMs = Date.now() - started;
  const afterChurn = await settledHeap();
  const whileHeld = await holdMany(subject, 'h', heldKeys);
  const afterHeld = await settledHeap();
  await subject.close();
  return {
    type: 'measured',
    retainedBytesPerKey: (afterChurn - baseline) / keys,
    heldBytes: whileHeld - afterChurn,
    retainedAfterHeldBytesPerKey: (afterHeld - afterChurn) / heldKeys,
    churnOpsPerSec: keys / (churnMs / 1000),
  };
});
