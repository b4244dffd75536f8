import { performance } from 'node:perf_hooks';
import type { LoggerService } from '@nestjs/common';
import type { SerializedError } from '../errors';
import { redactUrls } from '../internal/secrets.redact';

/** How long the same outage stays quiet in the log while no request gets through. */
export const OUTAGE_QUIET_MS = 5 * 60_000;

/**
 * Where the detail of a 503 goes: the server log, once per outage rather than once
 * per request. A client only learns that the lock backend is unavailable (the
 * mapper's body); the host, port, role and driver text are logged here, with any
 * password in a URL redacted.
 *
 * The first 503 of an error is logged; the same error (same text with the lock key
 * and handler left out) is then counted, not logged, until a request gets through
 * again or `quietMs` passes. One per app (a provider of SerializedModule): two apps in one process
 * keep their own. An error reported twice (by the interceptor that saw it, then by
 * the exception filter that answered it) counts once.
 */
export class BackendOutageLog {
  private current: string | undefined;
  private loggedAt = 0;
  private repeats = 0;
  // The interceptor and the exception filter may both see one error: it counts once.
  private readonly seen = new WeakSet<SerializedError>();

  constructor(
    private readonly logger: Pick<LoggerService, 'error' | 'log'>,
    private readonly quietMs = OUTAGE_QUIET_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A request was answered 503 because of `error`. */
  report(error: SerializedError, handler: string): void {
    if (this.seen.has(error)) return;
    this.seen.add(error);
    const signature = signatureOf(error);
    const now = this.now();
    if (signature === this.current && now - this.loggedAt < this.quietMs) {
      this.repeats++;
      return;
    }
    const since =
      signature === this.current && this.repeats > 0 ? ` (${this.repeats} more 503s with this error since it was last logged)` : '';
    this.current = signature;
    this.loggedAt = now;
    this.repeats = 0;
    this.logger.error(
      `Lock backend unavailable: ${handler} answered 503${since}. ${detailOf(error)}. ` +
        `Further 503s with this error are not logged until a request gets through or ${Math.round(this.quietMs / 1000)} s pass.`,
    );
  }

  /** A request got through: the next failure is news again. */
  recovered(): void {
    if (this.current === undefined) return;
    if (this.repeats > 0)
      this.logger.log(`Lock backend usable again; ${this.repeats} more requests were answered 503 after the error logged last`);
    this.current = undefined;
    this.repeats = 0;
  }
}

/** The error's text without what differs per request (lock key, handler), so one outage is one signature. */
function signatureOf(error: SerializedError): string {
  let text = `${error.name}: ${error.message}`;
  if (error.handler) text = text.split(` (in ${error.handler})`).join('');
  if (error.key) text = text.split(error.key).join('<key>');
  return text;
}

/** Message and causes (what the driver said), redacted. */
function detailOf(error: Error): string {
  let text = `${error.name}: ${error.message}`;
  let cause = (error as { cause?: unknown }).cause;
  for (let depth = 0; cause !== undefined && cause !== null && depth < 3; depth++) {
    // Duck-typed: a driver's errors may come from another realm, where instanceof Error fails.
    const message = typeof (cause as Error).message === 'string' ? (cause as Error).message : String(cause);
    if (message && !text.includes(message)) text += ` (cause: ${message})`;
    cause = (cause as { cause?: unknown }).cause;
  }
  return redactUrls(text);
}
