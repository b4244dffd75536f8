import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { SerializedConfigError } from '../config/serialized-config.error';
import type { SerializedMetadata } from '../metadata/serialized-options.interface';
import { SERIALIZED_OPTIONS_METADATA } from '../serialized.constants';
import { TransactionLocks } from './transaction-locks.runner';

// @nestjs/bullmq's `@Processor()` metadata (a literal: the package is an optional peer).
const BULLMQ_PROCESSOR_METADATA = 'bullmq:processor_metadata';

/**
 * Stops start-up when a `@Serialized(…, { transaction })` handler or method could
 * not run: `@nestjs-cls/transactional` (or `nestjs-cls`) not installed, no
 * `ClsModule` with its transactional plugin (or no host of that `connectionName`),
 * or an adapter whose transaction object the library cannot send a statement
 * through without `transaction.query`; and a BullMQ processor's job method, which
 * transaction mode does not serve. Never a 500 at the first request.
 */
@Injectable()
export class TransactionHandlersChecker implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly transactions: TransactionLocks,
  ) {}

  onModuleInit(): void {
    const problems = new Set<string>();
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | undefined;
      if (typeof type !== 'function' || !type.prototype) continue;
      const onClass = Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, type) as SerializedMetadata | undefined;
      if (onClass?.options.transaction) this.check(onClass, type.name, problems);
      for (const name of this.scanner.getAllMethodNames(type.prototype)) {
        const method = (type.prototype as Record<string, unknown>)[name];
        const metadata =
          typeof method === 'function'
            ? (Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, method) as SerializedMetadata | undefined)
            : undefined;
        if (!metadata?.options.transaction) continue;
        if (Reflect.hasMetadata(BULLMQ_PROCESSOR_METADATA, type)) {
          problems.add(
            `@Serialized(…, { transaction }) on ${type.name}#${name}: transaction mode does not apply to BullMQ jobs (they are parked, not run in a request); open the transaction inside the job instead`,
          );
        } else {
          this.check(metadata, `${type.name}#${name}`, problems);
        }
      }
    }
    if (problems.size) throw new SerializedConfigError([...problems]);
  }

  private check(metadata: SerializedMetadata, where: string, problems: Set<string>): void {
    const feature = `@Serialized(…, { transaction }) on ${where}`;
    try {
      const host = this.transactions.host(metadata.options.transaction!, feature);
      if (!this.transactions.canQuery(host)) {
        problems.add(
          `${feature}: the library does not recognise the adapter's transaction object; pass SerializedModule.forRoot({ transaction: { query: (tx, sql, params) => rows } })`,
        );
      }
    } catch (error) {
      if (!(error instanceof SerializedConfigError)) throw error;
      for (const problem of error.problems) problems.add(problem);
    }
  }
}
