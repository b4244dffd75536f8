import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isMissingPackage, missingPeerError } from '../config/optional.peer';
import { LockProvider } from '../lock.provider';
import { driverOf } from './driver-name.resolver';
import { healthReason } from './health-reason.formatter';

/**
 * What `isHealthy` returns: terminus's `HealthIndicatorResult`, spelled out here
 * so that the library's type declarations do not need `@nestjs/terminus` either.
 */
export type SerializedHealthResult<Key extends string = string> = {
  [K in Key]: { status: 'up' | 'down'; driver: string; message?: string };
};

/** The part of terminus 11's `HealthIndicatorService` this indicator uses. */
interface HealthIndicatorService {
  check(key: string): {
    up(data: Record<string, unknown>): Record<string, unknown>;
    down(data: Record<string, unknown>): Record<string, unknown>;
  };
}

/** Options of {@link SerializedHealthIndicator.isHealthy}. */
export interface SerializedHealthCheckOptions {
  /** How long the backend may take to answer before it counts as down (default 1000 ms). */
  timeoutMs?: number;
}

/** Default bound of one health check. */
export const SERIALIZED_HEALTH_TIMEOUT_MS = 1000;

/**
 * A `@nestjs/terminus` health indicator for the active lock backend: in-memory is
 * always up; Redis answers `PING`; PostgreSQL answers a statement on a lock
 * connection — each within a bounded time. The details name the driver and, when
 * down, the reason — without credentials or hosts (`healthReason`).
 *
 * Registered by `SerializedModule` (global), so any module of an app that also
 * imports `TerminusModule` can inject it:
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.serialized.isHealthy('locks')]); }
 * ```
 *
 * `@nestjs/terminus` is an optional peer: it is loaded on the first check, never
 * when the library is imported.
 */
@Injectable()
export class SerializedHealthIndicator {
  private healthIndicatorService: HealthIndicatorService | undefined;

  constructor(
    private readonly provider: LockProvider,
    private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * `{ [key]: { status: 'up', driver } }` when the backend answered within the
   * bound, `{ [key]: { status: 'down', driver, message } }` otherwise.
   * @throws SerializedConfigError when `@nestjs/terminus` is not installed (start-up already says so
   *   when a class of the app injects the indicator)
   */
  async isHealthy<const Key extends string>(key: Key, options: SerializedHealthCheckOptions = {}): Promise<SerializedHealthResult<Key>> {
    const indicator = this.terminus().check(key);
    const driver = driverOf(this.provider);
    try {
      await this.provider.ping(options.timeoutMs ?? SERIALIZED_HEALTH_TIMEOUT_MS);
      return indicator.up({ driver }) as SerializedHealthResult<Key>;
    } catch (error) {
      return indicator.down({ driver, message: healthReason(String((error as Error)?.message ?? error)) }) as SerializedHealthResult<Key>;
    }
  }

  private terminus(): HealthIndicatorService {
    if (this.healthIndicatorService) return this.healthIndicatorService;
    let Service: new () => HealthIndicatorService;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      Service = (require('@nestjs/terminus') as { HealthIndicatorService: new () => HealthIndicatorService }).HealthIndicatorService;
    } catch (error) {
      if (isMissingPackage(error, '@nestjs/terminus')) throw missingPeerError('SerializedHealthIndicator', '@nestjs/terminus');
      throw error;
    }
    let service: HealthIndicatorService | undefined;
    try {
      service = this.moduleRef.get(Service, { strict: false });
    } catch {
      // TerminusModule is not imported: its service is a plain helper without dependencies.
    }
    return (this.healthIndicatorService = service ?? new Service());
  }
}
