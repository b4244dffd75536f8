import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freeLocalPort } from '../../support/local-server';
import { ThrowawayServer } from '../../support/throwaway-server';

/**
 * A private `redis-server` for tests that stop, kill or reconfigure Redis: the shared
 * one on 6379 is never touched. Runs in the foreground as a child of the test, on a
 * free port that survives restarts (so clients can reconnect to it).
 */
export class ThrowawayRedis {
  private readonly server = new ThrowawayServer();

  private constructor(
    readonly port: number,
    private readonly args: string[] = [],
    private readonly dir?: string,
    private readonly extraArgs: string[] = [],
  ) {}

  /** A server on a free port, not started yet; `extraArgs` are added to its command line (e.g. `--requirepass`). */
  static async create(extraArgs: string[] = []): Promise<ThrowawayRedis> {
    return new ThrowawayRedis(await freeLocalPort(), [], undefined, extraArgs);
  }

  /** A Sentinel (not started yet) monitoring `master` under the name `name`. */
  static async sentinel(master: ThrowawayRedis, name: string): Promise<ThrowawayRedis> {
    const port = await freeLocalPort();
    // Sentinel rewrites its configuration file, so it gets a private one.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'serialized-sentinel-'));
    const config = path.join(dir, 'sentinel.conf');
    fs.writeFileSync(config, `port ${port}\nbind 127.0.0.1\nsentinel monitor ${name} 127.0.0.1 ${master.port} 1\n`);
    return new ThrowawayRedis(port, [config, '--sentinel'], dir);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = this.args.length
      ? this.args
      : ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.extraArgs];
    await this.server.start({
      command: 'redis-server',
      args,
      answers: () => accepts(this.port),
      startMs: 10_000,
      pollMs: 50,
      failed: () => new Error(`redis-server did not start on port ${this.port} (is redis-server installed? apt-get install redis-server)`),
    });
  }

  /**
   * Freezes the server (SIGSTOP): connections stay open and the kernel still
   * accepts new ones, but nothing is answered, as with a hung Redis or a silent
   * network path.
   */
  pause(): void {
    this.server.signal('SIGSTOP');
  }

  /** Lets a paused server run again (SIGCONT); it then answers what it was sent meanwhile. */
  resume(): void {
    this.server.signal('SIGCONT');
  }

  /** Kills the server at once (SIGKILL): clients see the connection drop. */
  async kill(): Promise<void> {
    await this.server.kill();
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
