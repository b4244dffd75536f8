import { Module, type DynamicModule } from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import { ReportsController } from './reports.controller';
import { ReportsProcessor } from './reports.processor';
import { resolveReportsOptions, type ReportsModuleOptions } from './reports-options.interface';
import { REPORTS_OPTIONS, REPORTS_QUEUE } from './reports.constants';

/**
 * The long-task flow: `POST /users/:userId/reports` (202 + `Location`),
 * `GET /jobs/:id`, and a `@Serialized('data.userId')` BullMQ processor.
 * Needs `SerializedModule.forRoot()` in the root module; brings its own queue
 * connection, so it does not depend on a `BullModule.forRoot()` elsewhere.
 */
@Module({})
export class ReportsModule {
  static register(options: ReportsModuleOptions = {}): DynamicModule {
    const resolved = resolveReportsOptions(options);
    return {
      module: ReportsModule,
      imports: [BullModule.registerQueue({ name: REPORTS_QUEUE, connection: resolved.connection, prefix: resolved.prefix })],
      controllers: [ReportsController],
      providers: [{ provide: REPORTS_OPTIONS, useValue: resolved }, ReportsProcessor],
    };
  }
}
