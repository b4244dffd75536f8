import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app.config';
import { AppStore, type Payment } from '../store/app.store';

/** "Charge the account": the slow call to a payment provider, then the record. Every call charges again. */
@Injectable()
export class PaymentsService {
  constructor(
    private readonly store: AppStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async charge(accountId: string, amount: number, currency: string): Promise<Payment> {
    await new Promise((resolve) => setTimeout(resolve, this.config.paymentTaskMs));
    const payment: Payment = { id: randomUUID(), accountId, amount, currency, status: 'succeeded', createdAt: Date.now() };
    await this.store.addPayment(payment);
    return payment;
  }

  list(accountId: string): Promise<Payment[]> {
    return this.store.listPayments(accountId);
  }
}
