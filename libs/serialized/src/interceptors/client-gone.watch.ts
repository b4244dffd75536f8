import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ExecutionContext } from '@nestjs/common';

/**
 * Calls `onGone` when the HTTP client disconnects before its response was sent
 * (Express and Fastify alike: both sit on Node's `ServerResponse`). Returns the
 * function that stops watching.
 */
export function watchClientGone(ctx: ExecutionContext, onGone: () => void): () => void {
  if (ctx.getType() !== 'http') return noop;
  const http = ctx.switchToHttp();
  const request = http.getRequest<{ raw?: IncomingMessage } & IncomingMessage>();
  const response = http.getResponse<{ raw?: ServerResponse } & ServerResponse>();
  const rawRequest = request?.raw ?? request;
  const rawResponse = response?.raw ?? response;
  if (typeof rawResponse?.on !== 'function') return noop;
  if (rawRequest?.socket?.destroyed) {
    queueMicrotask(onGone);
    return noop;
  }
  // 'close' also fires after a normal response; only an unfinished one means the client left.
  const onClose = (): void => {
    if (!rawResponse.writableFinished) onGone();
  };
  rawResponse.on('close', onClose);
  return () => rawResponse.off('close', onClose);
}

function noop(): void {}

/** Why a waiter left: its client disconnected or unsubscribed. */
export class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
  constructor(handler: string) {
    super(`The caller of ${handler} left before it got the lock`);
  }
}
