import net from 'node:net';
import type { ClientInternals } from './pg-client.internals';

/** Where a running statement lives: the server address and the session's cancel key. */
export interface CancelTarget {
  readonly host: string;
  readonly port: number;
  readonly processID: number;
  readonly secretKey: number;
}

const CANCEL_REQUEST_CODE = 80877102;

/**
 * Where the statement a pg client runs can be cancelled: its server address and the
 * session's cancel key; undefined when `client` is no connected pg client (no key yet,
 * or another driver's connection).
 */
export function cancelTargetOf(client: unknown): CancelTarget | undefined {
  const { host, port, processID, secretKey } = (client ?? {}) as Partial<ClientInternals>;
  if (typeof host !== 'string' || typeof port !== 'number' || typeof processID !== 'number' || typeof secretKey !== 'number')
    return undefined;
  return { host, port, processID, secretKey };
}

/**
 * Sends the protocol's CancelRequest for the statement `target` runs, the way
 * psql does on Ctrl-C: a fresh socket, 16 bytes, no authentication and no slot
 * of the lock pool. The server closes the socket once it has signalled the
 * backend, so resolving on close means the cancel was delivered. Best effort:
 * it resolves (never rejects) on error or after `timeoutMs`; the caller never
 * depends on it for correctness (the wait stays bounded by `lock_timeout`).
 */
export function sendCancelRequest(target: CancelTarget, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const socket = target.host.startsWith('/')
      ? net.connect({ path: `${target.host}/.s.PGSQL.${target.port}` })
      : net.connect({ host: target.host, port: target.port });
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    timer.unref();
    socket.once('connect', () => {
      const packet = Buffer.alloc(16);
      packet.writeInt32BE(16, 0);
      packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      packet.writeInt32BE(target.processID, 8);
      packet.writeInt32BE(target.secretKey, 12);
      socket.end(packet);
    });
    socket.once('close', done);
    socket.once('error', done);
  });
}
