import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { SerializedHealthIndicator } from 'nestjs-serialized';

/** `GET /health`: 200 when the lock backend answers within a second, 503 otherwise. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly serialized: SerializedHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.serialized.isHealthy('locks', { timeoutMs: 1000 })]);
  }
}
