import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { callOptionProblems } from './config/acquire-options.validator';
import { SerializedConfigError } from './config/serialized-config.error';
import { doorOf } from './local/lock-door.interface';
import { LockProvider } from './lock.provider';
import { SERIALIZED_OPTIONS_METADATA } from './serialized.constants';
import { TransactionLocks } from './transaction/transaction-locks.runner';
import type { SerializedMetadata } from './metadata/serialized-options.interface';

// @nestjs/bullmq's `@Processor()` metadata (a literal: the package is an optional peer).
const BULLMQ_PROCESSOR_METADATA = 'bullmq:processor_metadata';

/**
 * Stops start-up when a `@Serialized` handler or method could not run as
 * written — never a 500 at the first request:
 * - `{ transaction }`: `@nestjs-cls/transactional` (or `nestjs-cls`) not installed,
 *   no `ClsModule` with its transactional plugin (or no host of that
 *   `connectionName`), an adapter whose transaction object the library cannot send
 *   a statement through without `transaction.query`, or a BullMQ processor's job
 *   method, which transaction mode does not serve;
 * - `{ concurrency }` > 1 or `{ shared }` outside transaction mode, where the
 *   module's driver grants a key to one holder only (a BullMQ job method's
 *   `concurrency` included: its jobs hold the app's lock N together);
 * - `{ shared }` on a BullMQ job method, or a `concurrency` that is not an integer
 *   1-1000 there (docs/bullmq.md, "N jobs of one key at once").
 */
@Injectable()
export class SerializedHandlersChecker implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly transactions: TransactionLocks,
    private readonly provider: LockProvider,
  ) {}

  onModuleInit(): void {
    const problems = new Set<string>();
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | undefined;
      if (typeof type !== 'function' || !type.prototype) continue;
      const onClass = Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, type) as SerializedMetadata | undefined;
      const processor = Reflect.hasMetadata(BULLMQ_PROCESSOR_METADATA, type);
      if (onClass) this.checkHolders(onClass, type.name, processor, problems);
      if (onClass?.options.transaction) this.check(onClass, type.name, problems);
      for (const name of this.scanner.getAllMethodNames(type.prototype)) {
        const method = (type.prototype as Record<string, unknown>)[name];
        const metadata =
          typeof method === 'function'
            ? (Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, method) as SerializedMetadata | undefined)
            : undefined;
        if (metadata) this.checkHolders(metadata, `${type.name}#${name}`, processor, problems);
        if (!metadata?.options.transaction) continue;
        if (processor) {
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

  /** `concurrency` > 1 or `shared`: where the driver (or a job) cannot have several holders of one key. */
  private checkHolders(metadata: SerializedMetadata, where: string, processor: boolean, problems: Set<string>): void {
    const { concurrency, shared, transaction } = metadata.options;
    const invalid = processor && concurrency !== undefined ? callOptionProblems({ concurrency }) : [];
    if (invalid.length > 0) {
      problems.add(`@Serialized(…) on ${where}: ${invalid.join('; ')}`);
      return;
    }
    const asked =
      shared === true ? 'shared: true' : typeof concurrency === 'number' && concurrency > 1 ? `concurrency: ${concurrency}` : undefined;
    if (asked === undefined) return;
    if (processor && shared === true) {
      problems.add(
        `@Serialized(…, { shared: true }) on ${where}: BullMQ jobs do not hold a key shared (every job of the method would be a reader, so none would wait for another); ` +
          'use concurrency: N, or lockService.run(key, fn, { shared: true }) inside the job (docs/bullmq.md)',
      );
    } else if (!transaction && !doorOf(this.provider).holdsTogether) {
      problems.add(
        `@Serialized(…, { ${asked} }) on ${where}: the ${this.provider.constructor.name} grants a key to one holder at a time; ` +
          'several holders of one key are available with the in-memory, redis and postgres drivers, and shared in transaction mode (docs/semantics.md)',
      );
    }
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
