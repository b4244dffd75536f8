/**
 * Base class of every error the library throws on purpose. Errors are
 * transport-neutral: the HTTP (and RPC / WebSocket / GraphQL) mapping lives in
 * `serialized-error.mapper.ts`, nowhere else.
 */
export abstract class SerializedError extends Error {
  /** The lock key (for key errors: the key expression as written). */
  readonly key: string | undefined;
  /** `Class#method` of the handler or method that asked, when known. */
  handler: string | undefined;

  protected constructor(message: string, key: string | undefined, handler?: string, cause?: unknown) {
    super(withHandler(message, handler), cause === undefined ? undefined : { cause });
    this.key = key;
    this.handler = handler;
  }

  /**
   * Names the handler in an error raised below it (a provider does not know
   * which handler asked). Only the layer that created the error calls this,
   * before anyone else has seen it.
   * @internal
   */
  attachHandler(handler: string): this {
    if (this.handler) return this;
    const before = this.message;
    this.handler = handler;
    this.message = withHandler(before, handler);
    if (this.stack) this.stack = this.stack.replace(before, this.message);
    return this;
  }
}

function withHandler(message: string, handler: string | undefined): string {
  return handler ? `${message} (in ${handler})` : message;
}
