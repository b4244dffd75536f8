export * from './serialized.error';
export * from './lock-busy.error';
export * from './lock-timeout.error';
export * from './lock-lost.error';
export * from './lock-backend.error';
export * from './serialization-key.error';
export * from './lock-order.error';
export * from './lock-upgrade.error';
