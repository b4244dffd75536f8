import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createConnection } from 'mysql2/promise';
import { freeLocalPort } from '../../support/local-server';
import { ThrowawayServer } from '../../support/throwaway-server';

/** Where distributions put the server binaries (often outside a non-root PATH). */
const SEARCHED = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/local/mysql/bin'];
const INSTALL_HINT = 'install MariaDB (apt-get install mariadb-server) or MySQL (apt-get install mysql-server)';

/**
 * A private MariaDB (or MySQL) server for tests that kill and restart the server:
 * the shared one on 3306 is never touched. Its own datadir in a temporary
 * directory, its own port (kept across restarts so clients reconnect to it), run in
 * the foreground as a child of the test. Missing binaries fail with what to install.
 */
export class ThrowawayMariadb {
  private readonly server = new ThrowawayServer();

  private constructor(
    readonly port: number,
    private readonly binary: string,
    private readonly dir: string,
  ) {}

  /** Initialises a datadir (root without a password) on a free port; not started yet. */
  static async create(): Promise<ThrowawayMariadb> {
    const server = findBinary(['mariadbd', 'mysqld']);
    if (!server) throw new Error(`no mariadbd or mysqld found in ${SEARCHED.join(':')}: ${INSTALL_HINT}`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'serialized-mariadb-'));
    const datadir = path.join(dir, 'data');
    const installer = findBinary(['mariadb-install-db', 'mysql_install_db']);
    // MySQL 8 dropped mysql_install_db: its server initialises the datadir itself.
    const [command, args] = installer
      ? [installer, ['--no-defaults', `--datadir=${datadir}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...userArgs()]]
      : [server, ['--no-defaults', '--initialize-insecure', `--datadir=${datadir}`, ...userArgs()]];
    const installed = spawnSync(command, args, { encoding: 'utf8', timeout: 60_000 });
    if (installed.status !== 0) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`${command} could not initialise a datadir (${INSTALL_HINT}): ${installed.stderr || installed.error?.message}`);
    }
    return new ThrowawayMariadb(await freeLocalPort(), server, dir);
  }

  /** The URL of its `test` database. */
  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}/test`;
  }

  /** Starts the server on its port and waits until it answers (creating the `test` database on first start). */
  async start(): Promise<void> {
    const args = [
      '--no-defaults',
      `--datadir=${path.join(this.dir, 'data')}`,
      `--port=${this.port}`,
      '--bind-address=127.0.0.1',
      `--socket=${path.join(this.dir, 'server.sock')}`,
      `--pid-file=${path.join(this.dir, 'server.pid')}`,
      '--skip-log-bin',
      '--innodb-buffer-pool-size=16M',
      ...userArgs(),
    ];
    const log = path.join(this.dir, 'server.log');
    await this.server.start({
      command: this.binary,
      args,
      log,
      answers: () => this.answers(),
      startMs: 60_000,
      pollMs: 100,
      failed: () => {
        const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-8).join('\n');
        return new Error(`${this.binary} did not start on port ${this.port} (${INSTALL_HINT}):\n${tail}`);
      },
    });
  }

  /** Kills the server at once (SIGKILL): sessions drop without a goodbye, as in a crash. */
  kill(): Promise<void> {
    return this.server.kill();
  }

  /** Kills the server and removes its datadir. */
  async remove(): Promise<void> {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private async answers(): Promise<boolean> {
    try {
      const connection = await createConnection({ host: '127.0.0.1', port: this.port, user: 'root', connectTimeout: 1000 });
      try {
        await connection.query('CREATE DATABASE IF NOT EXISTS test');
      } finally {
        await connection.end();
      }
      return true;
    } catch {
      return false;
    }
  }
}

function findBinary(names: string[]): string | undefined {
  for (const name of names) {
    for (const dir of SEARCHED) {
      const candidate = path.join(dir, name);
      if (dir && fs.existsSync(candidate)) return candidate;
    }
  }
  return undefined;
}

/** The server refuses to run as root unless told to. */
function userArgs(): string[] {
  return process.getuid?.() === 0 ? ['--user=root'] : [];
}
