export * from './idempotency-key.error';
export * from './idempotency-conflict.error';
export * from './idempotency-mismatch.error';
