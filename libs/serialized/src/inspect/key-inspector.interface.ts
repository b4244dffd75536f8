import type { LockProvider } from '../lock.provider';
import type { LockInfo } from './lock-info.interface';

/**
 * How `LockService.inspect` reaches a provider: the library's own providers expose
 * it as their internal `inspector`; any other `LockProvider` is answered with
 * nothing held and nobody waiting (it cannot tell). Read-only: an inspector never
 * takes, extends or releases a key, nor delays a caller of it.
 */
export interface KeyInspector {
  inspect(key: string): Promise<LockInfo>;
}

/** The inspector of `provider`: its `inspector` when it has one. */
export function inspectorOf(provider: LockProvider): KeyInspector {
  const inspector = (provider as { readonly inspector?: KeyInspector }).inspector;
  if (inspector) return inspector;
  return { inspect: (key) => Promise.resolve({ key, holders: [], waitingHere: 0 }) };
}
