import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app.config';
import { AppStore } from './app.store';
import { InMemoryAppStore } from './in-memory-app.store';
import { PostgresAppStore } from './postgres-app.store';
import { RedisAppStore } from './redis-app.store';

@Global()
@Module({
  providers: [
    {
      provide: AppStore,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): AppStore => {
        switch (config.store) {
          case 'redis':
            return new RedisAppStore(config.redisUrl);
          case 'postgres':
            return new PostgresAppStore(config.databaseUrl);
          default:
            return new InMemoryAppStore();
        }
      },
    },
  ],
  exports: [AppStore],
})
export class StoreModule implements OnApplicationShutdown {
  constructor(@Inject(AppStore) private readonly store: AppStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
