import type * as OtelApi from '@opentelemetry/api';

/**
 * `@opentelemetry/api` when the app has it installed, `undefined` otherwise: it is
 * an optional peer, loaded only when a `LockService` is created, never when the
 * library is imported.
 * @internal
 */
export function loadOtelApi(): typeof OtelApi | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('@opentelemetry/api') as typeof OtelApi;
  } catch {
    return undefined;
  }
}
