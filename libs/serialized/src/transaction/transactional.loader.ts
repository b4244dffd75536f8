import { isMissingPackage, missingPeerError } from '../config/optional.peer';

/** What transaction mode uses of `@nestjs-cls/transactional` (structural: it is an optional peer). */
export interface TransactionalModule {
  getTransactionHostToken(connectionName?: string): unknown;
  readonly Propagation: { readonly RequiresNew: string };
}

/** The install line of transaction mode's peers. */
export const TRANSACTIONAL_PEERS = '@nestjs-cls/transactional nestjs-cls';

/**
 * Loads `@nestjs-cls/transactional` on first use: an app that never asks for
 * `transaction` does not need it (nor `nestjs-cls`, which it loads).
 *
 * @param feature what needs it, as the missing-peer error names it
 * @param load how to load a module (a test passes one that fails)
 */
export function loadTransactional(feature: string, load: (id: string) => unknown = require): TransactionalModule {
  try {
    return load('@nestjs-cls/transactional') as TransactionalModule;
  } catch (error) {
    if (isMissingPackage(error, '@nestjs-cls/transactional'))
      throw missingPeerError(feature, '@nestjs-cls/transactional', TRANSACTIONAL_PEERS);
    if (isMissingPackage(error, 'nestjs-cls')) throw missingPeerError(feature, 'nestjs-cls', TRANSACTIONAL_PEERS);
    throw error;
  }
}
