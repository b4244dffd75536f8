import type * as OtelApi from '@opentelemetry/api';
import type { Attributes, Span, Tracer, TracerProvider } from '@opentelemetry/api';
import type { Lock } from '../lock.interface';
import type { LockProvider } from '../lock.provider';
import { driverOf } from './driver-name.resolver';
import { loadOtelApi } from './otel-api.loader';
import { MAX_METRIC_SCOPES, outcomeOf } from './serialized.metrics';

/** Name of the OpenTelemetry tracer. */
export const SERIALIZED_TRACER_NAME = 'nestjs-serialized';

/** The attribute names of the library's spans. */
export const SPAN_ATTRIBUTES = {
  scope: 'serialized.scope',
  driver: 'serialized.driver',
  outcome: 'serialized.outcome',
  fencingToken: 'serialized.fencing_token',
} as const;

/**
 * The spans of one `LockService`: `serialized.wait` from a call to its grant or
 * refusal (only when it did not get the key at once) and `serialized.hold` from
 * the grant to the release, each a child of the span active at the call (the
 * HTTP request's, under the HTTP instrumentation). Attributes: `serialized.scope`
 * (the key up to its first `:`, as the metrics' `scope`, bounded alike),
 * `serialized.driver`, `serialized.outcome` and `serialized.fencing_token` (a
 * decimal string) — never the key itself. A failed wait or a lost hold records
 * its error on the span and sets its status to error.
 *
 * Created only when tracing is on (`tracing` option): otherwise `LockService`
 * holds `undefined` and pays one null check per call.
 * @internal
 */
export class SerializedTracing {
  /** One frozen attribute set per scope, so a span costs no object for them. */
  private readonly scopes = new Map<string, Attributes>();

  constructor(
    private readonly api: typeof OtelApi,
    private readonly tracer: Tracer,
    private readonly driver: string,
  ) {}

  /**
   * The spans of `provider`'s `LockService`, on `tracerProvider` (default: the
   * global one). `'auto'`: only when `@opentelemetry/api` is installed and a
   * TracerProvider is registered (before the app is created, as for metrics);
   * `'on'`: whenever the API is installed, through the global provider even if it
   * is registered later. `undefined` otherwise.
   */
  static create(provider: LockProvider, mode: 'auto' | 'on', tracerProvider?: TracerProvider): SerializedTracing | undefined {
    const api = loadOtelApi();
    if (!api) return undefined;
    const chosen = tracerProvider ?? api.trace.getTracerProvider();
    if (mode === 'auto' && !tracerProvider && isNoop(api, chosen)) return undefined;
    return new SerializedTracing(api, chosen.getTracer(SERIALIZED_TRACER_NAME), driverOf(provider));
  }

  /** A call for `key` that did not get it at once starts waiting: its `serialized.wait` span. */
  waiting(key: string): Span {
    return this.tracer.startSpan('serialized.wait', { attributes: this.attributesOf(key) }, this.api.context.active());
  }

  /** The wait ended with the key held. */
  acquired(span: Span, lock: Lock): void {
    span.setAttribute(SPAN_ATTRIBUTES.outcome, 'acquired');
    span.setAttribute(SPAN_ATTRIBUTES.fencingToken, lock.fencingToken.toString());
    span.end();
  }

  /** The wait for `key` ended without it (busy, timeout, backend error, aborted). */
  failed(span: Span, key: string, error: unknown): void {
    span.setAttribute(SPAN_ATTRIBUTES.outcome, outcomeOf(error));
    this.recordError(span, key, error);
    span.end();
  }

  /** `lock` is held from now: its `serialized.hold` span. */
  holding(lock: Lock): Span {
    const span = this.tracer.startSpan('serialized.hold', { attributes: this.attributesOf(lock.key) }, this.api.context.active());
    span.setAttribute(SPAN_ATTRIBUTES.fencingToken, lock.fencingToken.toString());
    return span;
  }

  /** The hold of `key` ended: `released`, or `lost` with the loss recorded. */
  released(span: Span, key: string, lost: Error | undefined): void {
    span.setAttribute(SPAN_ATTRIBUTES.outcome, lost ? 'lost' : 'released');
    if (lost) this.recordError(span, key, lost);
    span.end();
  }

  /**
   * The error as an `exception` event and the span's status — its type and its
   * message with the key's value masked (error messages name the key), without
   * the stack (whose first line repeats the message).
   */
  private recordError(span: Span, key: string, error: unknown): void {
    const name = (error as Error | undefined)?.name ?? 'Error';
    const message = maskKey(String((error as Error | undefined)?.message ?? error), key);
    span.recordException({ name, message });
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
  }

  private attributesOf(key: string): Attributes {
    const colon = key.indexOf(':');
    let scope = colon > 0 ? key.slice(0, colon) : '(none)';
    let attributes = this.scopes.get(scope);
    if (attributes) return attributes;
    // A key whose first part is itself a value (`${id}:…`) would put values in traces past the bound.
    if (this.scopes.size >= MAX_METRIC_SCOPES) scope = 'other';
    attributes = this.scopes.get(scope) ?? Object.freeze({ [SPAN_ATTRIBUTES.scope]: scope, [SPAN_ATTRIBUTES.driver]: this.driver });
    this.scopes.set(scope, attributes);
    return attributes;
  }
}

/** `text` with every occurrence of `key` replaced by its scope and an ellipsis (`cart:…`). */
function maskKey(text: string, key: string): string {
  const colon = key.indexOf(':');
  return text.split(key).join(colon > 0 ? `${key.slice(0, colon)}:…` : '…');
}

/** Whether `tracerProvider` is the API's no-op (the global proxy with nothing registered behind it). */
function isNoop(api: typeof OtelApi, tracerProvider: TracerProvider): boolean {
  const noop = new api.ProxyTracerProvider().getDelegate();
  return tracerProvider === noop || (tracerProvider instanceof api.ProxyTracerProvider && tracerProvider.getDelegate() === noop);
}
