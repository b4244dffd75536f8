import type { DynamicModule } from '@nestjs/common';
import { SerializedModule } from '../serialized.module';
import type { SerializedModuleOptions } from '../serialized-options.interface';

/**
 * `SerializedModule` on the in-memory driver, whatever `SERIALIZED_DRIVER` says, for
 * e2e tests of one process: no Redis, no PostgreSQL, the same semantics. Other
 * options (and `SERIALIZED_*` variables) apply as with `SerializedModule.forRoot`.
 */
export class SerializedTestingModule {
  static forRoot(options: Omit<SerializedModuleOptions, 'driver' | 'redis' | 'postgres'> = {}): DynamicModule {
    return SerializedModule.forRoot({ ...options, driver: 'memory' });
  }
}
