import net from 'node:net';

/** Listens on 127.0.0.1 (`port` 0: any free port) and resolves with the port it got. */
export async function listenLocal(server: net.Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as net.AddressInfo).port;
}

/** Stops accepting connections; resolves once the listener is closed. */
export function closeServer(server: net.Server): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/** `databaseUrl` with its host and port replaced by 127.0.0.1:`port` (a stand-in in front of the server). */
export function viaLocalPort(databaseUrl: string, port: number): string {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}

/** A port on 127.0.0.1 that was free a moment ago (nothing listens on it now). */
export async function freeLocalPort(): Promise<number> {
  const server = net.createServer();
  const port = await listenLocal(server);
  await closeServer(server);
  return port;
}
