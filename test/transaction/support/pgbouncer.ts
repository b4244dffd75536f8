import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect } from 'node:net';
import { freeLocalPort } from '../../support/local-server';
import { waitFor } from '../../support/timing';

const BINARY = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => fs.existsSync(p)) ?? 'pgbouncer';

/**
 * A throwaway PgBouncer in `pool_mode = transaction` on a port of its own, in a
 * temporary folder, in front of the test server (trust authentication, as the
 * server). PgBouncer refuses to run as root: it is started as `postgres` then.
 * `restart()` kills it hard and starts it again on the same port (every client and
 * server connection drops).
 */
export class PgBouncer {
  private child: ChildProcess | undefined;
  private dir = '';
  port = 0;

  constructor(
    private readonly target: { host: string; port: number; database: string },
    private readonly poolSize = 5,
  ) {}

  async start(): Promise<void> {
    if (!this.dir) {
      this.port = await freeLocalPort();
      this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbouncer-'));
      const { host, port, database } = this.target;
      fs.writeFileSync(
        path.join(this.dir, 'pgbouncer.ini'),
        [
          '[databases]',
          `${database} = host=${host} port=${port} dbname=${database}`,
          '[pgbouncer]',
          'listen_addr = 127.0.0.1',
          `listen_port = ${this.port}`,
          `unix_socket_dir = ${this.dir}`,
          'auth_type = trust',
          `auth_file = ${path.join(this.dir, 'users.txt')}`,
          'pool_mode = transaction',
          `default_pool_size = ${this.poolSize}`,
          'max_client_conn = 500',
          'ignore_startup_parameters = extra_float_digits,options,statement_timeout',
          'server_reset_query =',
          `logfile = ${path.join(this.dir, 'pgbouncer.log')}`,
          `pidfile = ${path.join(this.dir, 'pgbouncer.pid')}`,
          '',
        ].join('\n'),
      );
      fs.writeFileSync(path.join(this.dir, 'users.txt'), '"postgres" ""\n');
      if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres', this.dir]);
    }
    const ini = path.join(this.dir, 'pgbouncer.ini');
    if (!path.isAbsolute(BINARY) && !hasCommand(BINARY)) {
      throw new Error(
        'PgBouncer is not installed: the transaction-mode suites start a throwaway one. Install it (Debian: apt-get install -y pgbouncer; .ci/run does).',
      );
    }
    this.child =
      process.getuid?.() === 0
        ? spawn('runuser', ['-u', 'postgres', '--', BINARY, ini], { stdio: 'ignore' })
        : spawn(BINARY, [ini], { stdio: 'ignore' });
    const child = this.child;
    let exited = false;
    child.on('exit', () => (exited = true));
    await waitFor(() => exited || fs.existsSync(path.join(this.dir, 'pgbouncer.pid')), 10_000, 'PgBouncer to start');
    if (exited) throw new Error(`PgBouncer did not start:\n${this.log()}`);
    await waitFor(() => this.listening(), 10_000, 'PgBouncer to listen');
  }

  url(user = 'postgres'): string {
    return `postgres://${user}@127.0.0.1:${this.port}/${this.target.database}`;
  }

  log(): string {
    try {
      return fs.readFileSync(path.join(this.dir, 'pgbouncer.log'), 'utf8').slice(-4000);
    } catch {
      return '';
    }
  }

  /** Kills PgBouncer hard (SIGKILL) and starts it again on the same port. */
  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  async stop(): Promise<void> {
    await this.kill();
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
    this.dir = '';
  }

  private async kill(): Promise<void> {
    const pidFile = path.join(this.dir, 'pgbouncer.pid');
    const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').trim()) : undefined;
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await waitFor(() => !alive(pid), 10_000, 'PgBouncer to exit');
    }
    fs.rmSync(pidFile, { force: true });
    this.child = undefined;
  }

  private listening(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect(this.port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `name` is on the PATH. */
function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
