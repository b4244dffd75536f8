import { Floor } from '../protocol/queue.floor';

/** What admission reads of a key's waiters in this process (waiting/redis.waiter.ts's `RedisQueueShare`). */
export interface RiderView<W> {
  /** Waiters whose acquisition or confirmation is on its way to Redis (the newcomer among them). */
  readonly asking: number;
  /** The waiter whose acquire call went out last. */
  readonly leader: (W & { readonly phase: string }) | undefined;
  /** This process's last place in the Redis queue (queued), with the place of the first waiter of another process told behind it. */
  readonly lastPlace: (W & { readonly notice: number }) | undefined;
}

/**
 * Where a new waiter goes: behind a waiter on its way (`follow`), a rider (`ride`,
 * behind `anchor` or on the tenure), or `send`. A rider is a waiter, never the
 * caller about to become the holder: the backend asks the layer's bound
 * (`LockLines.waitsThere`) before it rides, as a place's reply does.
 */
export type Admission<W> =
  { readonly kind: 'follow'; readonly leader: W } | { readonly kind: 'ride'; readonly anchor: W | undefined } | { readonly kind: 'send' };

/**
 * Riders: waiters without a place of their own in the Redis queue (docs/protocol.md,
 * Redis). A rider waits in this process and is served by a local hand-off, either
 * on the process's tenure of the key (it holds the key: the riders at the front of
 * the key's list, see `TenureRegistry`) or behind the process's last place in the
 * queue while nobody of another process is known to be queued behind that place (a
 * run of riders behind that waiter, served by the tenure its place begins). A
 * newcomer that finds one of the process's waiters on its way to Redis follows it:
 * it waits for that reply, then rides or queues. Local arrival order holds
 * throughout: riders are linked behind every waiter of the process that came earlier.
 *
 * `may`: local hand-off is on, this process hears its wake-up channel (a remote
 * waiter's notice would reach it) and is not shutting down. `mayRideTenure`: no
 * waiter of another process is known to wait for the key this process holds.
 * Decides only; the Redis backend (redis.backend.ts) carries it out.
 */
export function admit<W>(queue: RiderView<W>, may: boolean, mayRideTenure: () => boolean): Admission<W> {
  if (!may) return { kind: 'send' };
  if (queue.asking > 1) {
    // Someone of this process is on the way to a place (nobody may get ahead of it):
    // the newcomer waits for its reply, then rides behind it or queues.
    return queue.leader?.phase === 'sending' ? { kind: 'follow', leader: queue.leader } : { kind: 'send' };
  }
  const anchor = queue.lastPlace;
  // Behind this process's last place: only while nobody of another process is known to be queued behind it.
  if (anchor) return anchor.notice === Floor.NONE ? { kind: 'ride', anchor } : { kind: 'send' };
  return mayRideTenure() ? { kind: 'ride', anchor: undefined } : { kind: 'send' };
}
