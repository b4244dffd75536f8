import { Module } from '@nestjs/common';
import { NaivePaymentsController, PaymentsController } from './payments.controller';
import { PaymentsService } from './payments.service';

@Module({
  controllers: [PaymentsController, NaivePaymentsController],
  providers: [PaymentsService],
})
export class PaymentsModule {}
