import net from 'node:net';
import { closeServer, listenLocal, viaLocalPort } from '../../support/local-server';

/**
 * A minimal stand-in for PgBouncer in `pool_mode = transaction`: each client
 * connection is backed by two server sessions, and every transaction (a simple
 * Query, or an extended-protocol batch ending in Sync) goes to the next one in
 * turn. Exactly what breaks session advisory locks, without installing PgBouncer.
 * Supports trust authentication and no TLS, like the test server.
 */
export class TransactionPooler {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    this.port = await listenLocal(server);
    this.server = server;
  }

  url(databaseUrl: string): string {
    return viaLocalPort(databaseUrl, this.port);
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await closeServer(server);
  }

  private track(socket: net.Socket): net.Socket {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    return socket;
  }

  private accept(client: net.Socket): void {
    this.track(client);
    const upstreams = [this.track(net.connect(this.target)), this.track(net.connect(this.target))];
    const closeAll = (): void => [client, ...upstreams].forEach((s) => s.destroy());
    [client, ...upstreams].forEach((s) => s.on('close', closeAll));

    let pending = Buffer.alloc(0);
    let started = false;
    let ready = 0;
    let batch: Buffer[] = [];
    let turn = 0;
    let queued: Buffer[] = [];
    let upstream0Ready = false;
    let swallowing = Buffer.alloc(0);
    let upstream1Ready = false;

    // Upstream 0 talks to the client from the start; upstream 1's start-up answers
    // are swallowed until its first ReadyForQuery.
    upstreams[0].on('data', (chunk) => {
      client.write(chunk);
      if (!upstream0Ready && chunk.includes(Buffer.from('Z\0\0\0\x05'))) {
        upstream0Ready = true;
        onReady();
      }
    });
    upstreams[1].on('data', (chunk) => {
      if (upstream1Ready) return void client.write(chunk);
      swallowing = Buffer.concat([swallowing, chunk]);
      for (;;) {
        if (swallowing.length < 5) return;
        const type = String.fromCharCode(swallowing[0]);
        const length = swallowing.readInt32BE(1);
        if (swallowing.length < 1 + length) return;
        swallowing = swallowing.subarray(1 + length);
        if (type === 'Z') {
          upstream1Ready = true;
          if (swallowing.length) client.write(swallowing);
          onReady();
          return;
        }
      }
    });
    const onReady = (): void => {
      if (++ready < 2) return;
      for (const chunk of queued) handle(chunk);
      queued = [];
    };

    const handle = (chunk: Buffer): void => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (pending.length < 5) return;
        const type = String.fromCharCode(pending[0]);
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) return;
        const message = pending.subarray(0, 1 + length);
        pending = pending.subarray(1 + length);
        if (type === 'X') return closeAll();
        batch.push(message);
        if (type === 'S' || type === 'Q') {
          upstreams[turn].write(Buffer.concat(batch));
          batch = [];
          turn = 1 - turn;
        }
      }
    };

    client.on('data', (chunk) => {
      if (!started) {
        // The start-up packet (no type byte) goes to both server sessions.
        pending = Buffer.concat([pending, chunk]);
        if (pending.length < 4) return;
        const length = pending.readInt32BE(0);
        if (pending.length < length) return;
        const startup = pending.subarray(0, length);
        const rest = pending.subarray(length);
        pending = Buffer.alloc(0);
        started = true;
        upstreams.forEach((u) => u.write(startup));
        if (rest.length) queued.push(rest);
        return;
      }
      if (ready < 2) queued.push(chunk);
      else handle(chunk);
    });
  }
}
