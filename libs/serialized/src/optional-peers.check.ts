import { Injectable, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { SERIALIZED_JOBS_OPTIONS_METADATA } from './bullmq/serialized-jobs.decorator';
import { canLoad, missingPeerProblem } from './config/optional.peer';
import { SerializedConfigError } from './config/serialized-config.error';
import { SerializedHealthIndicator } from './observability/serialized-health.indicator';
import { SERIALIZED_OPTIONS_METADATA } from './serialized.constants';

// @nestjs/bullmq's `@Processor()` metadata (a literal: the package is an optional peer).
const BULLMQ_PROCESSOR_METADATA = 'bullmq:processor_metadata';

/**
 * Stops start-up when the app uses a feature whose optional peer the library
 * cannot load, rather than at its first job or health check: a `@Serialized`
 * BullMQ processor (`@Processor()` or `@SerializedJobs()` on its class) without
 * `bullmq`, a class that injects `SerializedHealthIndicator` without
 * `@nestjs/terminus`. One `SerializedConfigError` lists every such class, in the
 * form of every missing peer (`config/optional.peer.ts`).
 */
@Injectable()
export class OptionalPeersCheck implements OnModuleInit {
  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    const problems: string[] = [];
    const classes = new Set<Type>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      if (typeof wrapper.metatype === 'function' && wrapper.metatype.prototype) classes.add(wrapper.metatype as Type);
    }
    for (const type of classes) {
      if (isSerializedProcessor(type) && !canLoad('bullmq')) {
        problems.push(missingPeerProblem(`@Serialized on the BullMQ processor ${type.name}`, 'bullmq', 'bullmq @nestjs/bullmq'));
      }
      if (injects(type, SerializedHealthIndicator) && !canLoad('@nestjs/terminus')) {
        problems.push(missingPeerProblem(`SerializedHealthIndicator (injected into ${type.name})`, '@nestjs/terminus'));
      }
    }
    if (problems.length) throw new SerializedConfigError(problems);
  }
}

function isSerializedProcessor(type: Type): boolean {
  const processor = Reflect.hasMetadata(BULLMQ_PROCESSOR_METADATA, type) || Reflect.hasMetadata(SERIALIZED_JOBS_OPTIONS_METADATA, type);
  return (
    processor &&
    (Reflect.hasMetadata(SERIALIZED_OPTIONS_METADATA, type) ||
      methodsOf(type).some((m) => Reflect.hasMetadata(SERIALIZED_OPTIONS_METADATA, m)))
  );
}

/** Whether `type`'s constructor or properties ask Nest for `dependency`. */
function injects(type: Type, dependency: Type): boolean {
  const params = (Reflect.getMetadata('design:paramtypes', type) as unknown[] | undefined) ?? [];
  const explicit = ((Reflect.getMetadata('self:paramtypes', type) as { param: unknown }[] | undefined) ?? []).map((p) => p.param);
  const properties = ((Reflect.getMetadata('self:properties_metadata', type) as { type: unknown }[] | undefined) ?? []).map((p) => p.type);
  return [...params, ...explicit, ...properties].includes(dependency);
}

function methodsOf(type: Type): object[] {
  const methods: object[] = [];
  for (let proto = type.prototype as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
      if (typeof value === 'function' && name !== 'constructor') methods.push(value);
    }
  }
  return methods;
}
