import type { Client } from 'pg';

/** The internals of `pg.Client` the lock sessions rely on (stable across pg 8). */
export interface ClientInternals {
  processID: number | null;
  secretKey: number | null;
  host: string;
  port: number;
  connection?: { stream?: { destroy(): void } };
  ref?(): void;
  unref?(): void;
}

/** Drops the client's socket at once (the server then ends the session, freeing its locks). */
export function destroySocket(client: Client): void {
  const stream = (client as unknown as ClientInternals).connection?.stream;
  if (stream) stream.destroy();
  else void client.end().catch(() => undefined);
}
