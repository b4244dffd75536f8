import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

/** How {@link ThrowawayServer.start} runs a server and tells that it is up. */
export interface ServerStart {
  /** The server binary (a path, or a name looked up on PATH). */
  readonly command: string;
  readonly args: readonly string[];
  /** A file its output is appended to; none: the output is dropped. */
  readonly log?: string;
  /** Whether the server answers yet: asked again every `pollMs` until it does. */
  readonly answers: () => Promise<boolean>;
  /** How long it may take to answer. */
  readonly startMs: number;
  readonly pollMs: number;
  /** What `start` throws when the server exits or has not answered within `startMs`. */
  readonly failed: () => Error;
}

/**
 * A server process of a test's own (`test/redis/support/throwaway-redis.ts`,
 * `test/mysql/support/throwaway-mariadb.ts`): run in the foreground as a child
 * of the test, so that the test can freeze or kill it as a crash would, and start
 * it again on the port its owner chose.
 */
export class ThrowawayServer {
  private child: ChildProcess | undefined;

  /** Starts the server and resolves once it answers. */
  async start(how: ServerStart): Promise<void> {
    let child: ChildProcess;
    if (how.log === undefined) {
      child = spawn(how.command, how.args, { stdio: 'ignore' });
    } else {
      const log = fs.openSync(how.log, 'a');
      child = spawn(how.command, how.args, { stdio: ['ignore', log, log] });
      fs.closeSync(log);
    }
    // A binary that cannot run also sets exitCode, which the wait below reports: the event must not crash the test.
    child.once('error', () => undefined);
    this.child = child;
    for (const deadline = Date.now() + how.startMs; ;) {
      if (await how.answers()) return;
      if (child.exitCode !== null || Date.now() > deadline) throw how.failed();
      await new Promise((resolve) => setTimeout(resolve, how.pollMs));
    }
  }

  /** Sends `signal` to the running server, if one runs (SIGSTOP, SIGCONT). */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** Kills the server at once (SIGKILL) and resolves once it has exited: clients see their connections drop. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
}
