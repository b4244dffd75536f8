import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { DigestController } from './digest.controller';
import { DigestJob } from './digest.job';
import { DigestLog } from './digest.log';

/**
 * The scheduled job of the example app: a nightly digest with `@OncePerTick`, on
 * @nestjs/schedule. Needs `SerializedModule.forRoot()` in the root module (its driver
 * is where the ticks are claimed).
 */
@Module({
  imports: [ScheduleModule.forRoot()],
  controllers: [DigestController],
  providers: [DigestLog, DigestJob],
})
export class DigestModule {}
