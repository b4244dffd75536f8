import type { LockHolderInfo } from './lock-info.interface';

/** What a holder of this process shows: its token always, and how long it has held the key when its lock knows. */
export function holderHere(
  lock: { readonly fencingToken: bigint; readonly acquiredAt?: number },
  now: number,
  more?: Omit<LockHolderInfo, 'here' | 'fencingToken'>,
): LockHolderInfo {
  const holder: LockHolderInfo = { fencingToken: lock.fencingToken, here: true, shared: false };
  if (lock.acquiredAt !== undefined) holder.heldForMs = Math.max(0, Math.round(now - lock.acquiredAt));
  return more ? { ...holder, ...more } : holder;
}
