import net from 'node:net';
import { closeServer, freeLocalPort, listenLocal, viaLocalPort } from '../../support/local-server';

/**
 * A TCP proxy in front of PostgreSQL that a test controls, to simulate what it
 * must never do to the shared server: drop every connection (a restart or a cut
 * network), go silent (a black hole), or refuse connections (server down).
 */
export class TcpProxy {
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private server: net.Server | undefined;
  private silent = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** Listens (again) on the same port once it is known. */
  async start(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    this.port = await listenLocal(server, this.port);
    this.server = server;
  }

  /** A connection URL that goes through the proxy. */
  url(databaseUrl: string): string {
    return viaLocalPort(databaseUrl, this.port);
  }

  get connections(): number {
    return this.pairs.size;
  }

  /** Destroys every proxied connection, both sides (what a server restart looks like to a client). */
  cutAll(): void {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Stops forwarding bytes without closing anything: the network path went dark. */
  blackhole(): void {
    this.silent = true;
  }

  /** Closes the listener and every connection: new connections are refused. */
  async stop(): Promise<void> {
    this.cutAll();
    const server = this.server;
    this.server = undefined;
    if (server) await closeServer(server);
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.target);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const close = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (!this.silent) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!this.silent) client.write(chunk);
    });
    client.on('close', close);
    upstream.on('close', close);
    client.on('error', close);
    upstream.on('error', close);
  }
}

/** A server that accepts TCP connections and never says a word (an unresponsive host). */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  return {
    port: await listenLocal(server),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

/** A port on which nothing listens (connections are refused). */
export const closedPort = freeLocalPort;
