import { Body, Controller, Get, Param, Post, Res } from '@nestjs/common';
import { Idempotent } from 'nestjs-serialized';
import type { Payment } from '../store/app.store';
import { CreatePaymentDto } from './create-payment.dto';
import { PaymentsService } from './payments.service';

type HeaderResponse = { header(name: string, value: string): unknown };

/**
 * A payment a client retries: with the same `Idempotency-Key`, a retry (or a
 * double click, or a copy sent to another instance) gets the first charge's
 * response — same id, same 201, same Location — and the account is charged once.
 * Keys are scoped per account, so two accounts' identical keys never meet.
 */
@Controller('accounts/:accountId/payments')
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  @Idempotent({ scope: 'params.accountId' })
  async create(
    @Param('accountId') accountId: string,
    @Body() body: CreatePaymentDto,
    @Res({ passthrough: true }) res: HeaderResponse,
  ): Promise<Payment> {
    const payment = await this.payments.charge(accountId, body.amount, body.currency);
    res.header('Location', `/accounts/${accountId}/payments/${payment.id}`);
    return payment;
  }

  @Get()
  list(@Param('accountId') accountId: string): Promise<Payment[]> {
    return this.payments.list(accountId);
  }
}

/** The same handler without `@Idempotent`, to see the retries charge again. */
@Controller('naive/accounts/:accountId/payments')
export class NaivePaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  async create(
    @Param('accountId') accountId: string,
    @Body() body: CreatePaymentDto,
    @Res({ passthrough: true }) res: HeaderResponse,
  ): Promise<Payment> {
    const payment = await this.payments.charge(accountId, body.amount, body.currency);
    res.header('Location', `/accounts/${accountId}/payments/${payment.id}`);
    return payment;
  }
}
