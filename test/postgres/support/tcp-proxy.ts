import net from 'node:net';
import { closeServer, freeLocalPort, listenLocal, viaLocalPort } from '../../support/local-server';

/**
 * One direction of a proxied connection: bytes leave in the order they came,
 * each no earlier than `latencyMs` after it arrived (a slow path, not a lossy one).
 */
class DelayedPipe {
  private readonly queue: { chunk: Buffer; dueAt: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Chunks kept back by `hold` (written as one chunk by `flush`), and whether the far side closed meanwhile. */
  private held: Buffer[] | undefined;
  private endAfterFlush = false;

  constructor(
    private readonly to: net.Socket,
    private readonly latencyMs: () => number,
    private readonly onForward: () => void,
  ) {}

  /** Chunks held back by the latency right now. */
  get pending(): number {
    return this.queue.length;
  }

  push(chunk: Buffer): void {
    if (this.held) return void this.held.push(chunk);
    const latency = this.latencyMs();
    if (latency <= 0 && this.queue.length === 0) return this.write(chunk);
    // Never before an earlier chunk: lowering the latency must not reorder bytes.
    const last = this.queue[this.queue.length - 1];
    this.queue.push({ chunk, dueAt: Math.max(Date.now() + latency, last?.dueAt ?? 0) });
    this.schedule();
  }

  /** Keeps every later chunk back until `flush`. */
  hold(): void {
    this.held ??= [];
  }

  get holding(): boolean {
    return this.held !== undefined;
  }

  /** The far side closed while held: close this side only after the held bytes went out. */
  closeAfterFlush(): void {
    this.endAfterFlush = true;
  }

  /** Writes what was held as one chunk (so the receiver reads it in one go), then closes if the far side did. */
  flush(): void {
    const held = this.held;
    this.held = undefined;
    if (held?.length) this.write(Buffer.concat(held));
    if (this.endAfterFlush) this.to.end();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        while (this.queue.length && this.queue[0].dueAt <= Date.now()) this.write(this.queue.shift()!.chunk);
        this.schedule();
      },
      Math.max(0, this.queue[0].dueAt - Date.now()),
    );
  }

  private write(chunk: Buffer): void {
    this.onForward();
    if (!this.to.destroyed) this.to.write(chunk);
  }
}

/**
 * A TCP proxy in front of PostgreSQL that a test controls, to simulate what it
 * must never do to the shared server: drop every connection (a restart or a cut
 * network), go silent (a black hole), slow down (latency on every byte, the
 * session staying alive), or refuse connections (server down).
 */
export class TcpProxy {
  private readonly pairs = new Set<{
    client: net.Socket;
    upstream: net.Socket;
    upstreamClosed: boolean;
    toServer: DelayedPipe;
    toClient: DelayedPipe;
  }>();
  private server: net.Server | undefined;
  private silent = false;
  private latencyMs = 0;
  /** Chunks forwarded so far, per direction, over every connection. */
  readonly forwarded = { toServer: 0, toClient: 0 };
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
    for (const { client, upstream, toServer, toClient } of this.pairs) {
      toServer.stop();
      toClient.stop();
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Stops forwarding bytes without closing anything: the network path went dark. */
  blackhole(): void {
    this.silent = true;
  }

  /**
   * Delays every byte by `ms` in each direction from now on (a round trip takes
   * twice as long); 0 makes the path fast again. Nothing is dropped or reordered.
   */
  delay(ms: number): void {
    this.latencyMs = ms;
  }

  /**
   * Keeps every byte the server sends from now on (the server's close too) until
   * {@link flushToClients}: replies and whatever follows them then reach the client
   * in one read, as they do when they cross a slow path close together.
   */
  holdToClients(): void {
    for (const pair of this.pairs) pair.toClient.hold();
  }

  /**
   * {@link holdToClients} for the `nth` connection accepted (0: the first) only, so
   * that one connection's replies wait while another's (a subscriber's) flow.
   */
  holdToClientOf(nth: number): void {
    [...this.pairs][nth].toClient.hold();
  }

  /** Sends what {@link holdToClients} kept, one chunk per connection, then the server's close if it came. */
  flushToClients(): void {
    for (const pair of [...this.pairs]) {
      pair.toClient.flush();
      if (pair.upstreamClosed) this.pairs.delete(pair);
    }
  }

  /** Chunks held back by the latency right now, per direction. */
  get pending(): { toServer: number; toClient: number } {
    let toServer = 0;
    let toClient = 0;
    for (const pair of this.pairs) {
      toServer += pair.toServer.pending;
      toClient += pair.toClient.pending;
    }
    return { toServer, toClient };
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
    const latency = (): number => this.latencyMs;
    const pair = {
      client,
      upstream,
      upstreamClosed: false,
      toServer: new DelayedPipe(upstream, latency, () => this.forwarded.toServer++),
      toClient: new DelayedPipe(client, latency, () => this.forwarded.toClient++),
    };
    this.pairs.add(pair);
    const close = (): void => {
      this.pairs.delete(pair);
      pair.toServer.stop();
      pair.toClient.stop();
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (!this.silent) pair.toServer.push(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!this.silent) pair.toClient.push(chunk);
    });
    // While the server's bytes are held, its close waits behind them (flushToClients sends both).
    const upstreamGone = (): void => {
      if (!pair.toClient.holding) return close();
      pair.upstreamClosed = true;
      pair.toClient.closeAfterFlush();
    };
    client.on('close', close);
    upstream.on('close', upstreamGone);
    client.on('error', close);
    upstream.on('error', upstreamGone);
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
