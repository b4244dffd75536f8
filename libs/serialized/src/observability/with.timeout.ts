import { LockBackendError } from '../errors';

/**
 * `work`, or a `LockBackendError` saying what did not answer once `timeoutMs`
 * has passed. The timer is unref'd (a health check never keeps the process up)
 * and cleared as soon as `work` settles.
 */
export function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new LockBackendError(`${what} did not answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  // A late failure of `work` after the timeout won must not become an unhandled rejection.
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
