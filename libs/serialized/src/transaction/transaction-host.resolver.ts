import type { ModuleRef } from '@nestjs/core';
import { SerializedConfigError } from '../config/serialized-config.error';
import { loadTransactional, type TransactionalModule } from './transactional.loader';

/** The part of `@nestjs-cls/transactional`'s `TransactionHost` the library uses. */
export interface TransactionHostLike {
  readonly tx: unknown;
  isTransactionActive(): boolean;
  withTransaction<R>(fn: () => Promise<R>): Promise<R>;
  withTransaction<R>(propagation: string, fn: () => Promise<R>): Promise<R>;
}

/** How the app is told to set transaction mode up. */
export function missingHostProblem(feature: string, connectionName: string | undefined): string {
  const named = connectionName === undefined ? '' : `, connectionName: '${connectionName}'`;
  return (
    `${feature} needs a TransactionHost of @nestjs-cls/transactional${connectionName === undefined ? '' : ` named '${connectionName}'`}: ` +
    `import ClsModule.forRoot({ plugins: [new ClsPluginTransactional({ adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource })${named} })] }) ` +
    `from nestjs-cls and @nestjs-cls/transactional (any adapter over PostgreSQL; docs/transactions.md)`
  );
}

/**
 * Finds the app's `TransactionHost` (default or named) in its container, once per
 * connection name. Throws a `SerializedConfigError` naming what to install and
 * import when there is none.
 */
export class TransactionHostResolver {
  private transactional: TransactionalModule | undefined;
  private readonly hosts = new Map<string | undefined, TransactionHostLike>();

  constructor(private readonly moduleRef: ModuleRef) {}

  /** `@nestjs-cls/transactional`, loaded now (a missing-peer error names `feature`). */
  module(feature: string): TransactionalModule {
    return (this.transactional ??= loadTransactional(feature));
  }

  host(connectionName: string | undefined, feature: string): TransactionHostLike {
    const known = this.hosts.get(connectionName);
    if (known) return known;
    const token = this.module(feature).getTransactionHostToken(connectionName);
    let host: TransactionHostLike | undefined;
    try {
      host = this.moduleRef.get(token as never, { strict: false }) as TransactionHostLike | undefined;
    } catch {
      host = undefined;
    }
    if (!host || typeof host.withTransaction !== 'function') throw new SerializedConfigError([missingHostProblem(feature, connectionName)]);
    this.hosts.set(connectionName, host);
    return host;
  }
}
