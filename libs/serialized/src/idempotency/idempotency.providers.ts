import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';
import { IdempotentMetadataAccessor } from './idempotent-metadata.accessor';
import { IdempotentRoutesChecker } from './idempotent-routes.checker';

/** What `SerializedModule` registers for `@Idempotent` (it also imports Nest's `DiscoveryModule` for the start-up check). */
export const IDEMPOTENCY_PROVIDERS = [IdempotencyService, IdempotencyInterceptor, IdempotentMetadataAccessor, IdempotentRoutesChecker];
/** What it exports: the interceptor is resolved in the decorated controller's module. */
export const IDEMPOTENCY_EXPORTS = [IdempotencyService, IdempotencyInterceptor, IdempotentMetadataAccessor];
