import { Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { DataSource } from 'typeorm';
import { DailyReward } from './daily-reward.entity';
import { ensureDailyRewardsTable } from './daily-rewards.schema';
import { NaiveTransactionalRewardsController, TransactionalRewardsController } from './transactional-rewards.controller';
import { TransactionalRewardsService } from './transactional-rewards.service';

/** The app's TypeORM DataSource (PostgreSQL at `databaseUrl`), closed with the app. */
@Module({})
class DatabaseModule implements OnApplicationShutdown {
  static register(databaseUrl: string): DynamicModule {
    const dataSource = {
      provide: DataSource,
      useFactory: async () => {
        const source = new DataSource({ type: 'postgres', url: databaseUrl, entities: [DailyReward], extra: { max: 10 } });
        await source.initialize();
        await ensureDailyRewardsTable(source);
        return source;
      },
    };
    return { module: DatabaseModule, providers: [dataSource], exports: [DataSource] };
  }

  constructor(private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/**
 * Transaction mode (`TX_REWARDS_ENABLED`, docs/transactions.md): the daily reward in a TypeORM
 * transaction, with `@nestjs-cls/transactional` giving the library the app's
 * transaction (docs/transactions.md).
 */
@Module({})
export class TransactionalRewardsModule {
  static register(databaseUrl: string): DynamicModule {
    const database = DatabaseModule.register(databaseUrl);
    return {
      module: TransactionalRewardsModule,
      imports: [
        database,
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({ imports: [database], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }) }),
          ],
        }),
      ],
      controllers: [TransactionalRewardsController, NaiveTransactionalRewardsController],
      providers: [TransactionalRewardsService],
    };
  }
}
