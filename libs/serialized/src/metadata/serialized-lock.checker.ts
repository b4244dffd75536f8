import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { SerializedConfigError } from '../config/serialized-config.error';
import { SerializedMetadataAccessor } from './serialized-metadata.accessor';

/**
 * Refuses, when the app starts, `@SerializedLock()` on a handler that holds no
 * lock (no `@Serialized` on it or its class, or `@SkipSerialized()`): it would
 * fail on every request. One error lists them all.
 */
@Injectable()
export class SerializedLockChecker implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly metadata: SerializedMetadataAccessor,
  ) {}

  onModuleInit(): void {
    const problems = new Set<string>();
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | undefined;
      if (typeof type !== 'function' || !type.prototype) continue;
      for (const name of this.scanner.getAllMethodNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (typeof handler !== 'function' || !this.metadata.takesLock(handler) || this.metadata.get(handler, type)) continue;
        problems.add(
          `@SerializedLock() on ${type.name}#${name}: the handler holds no lock (no @Serialized on it or its class, or it is @SkipSerialized()); serialize it or remove the parameter`,
        );
      }
    }
    if (problems.size) throw new SerializedConfigError([...problems]);
  }
}
