import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { COMPILED, REPO_ROOT, RUN_ROOT } from './repo-root';

export type Message = { type: string; [field: string]: unknown };

/**
 * A benchmark worker: a real OS process running a TypeScript file under ts-node
 * (transpile-only, with the `nestjs-serialized` path mapping), driven over IPC.
 */
export class WorkerProcess {
  private readonly inbox: Message[] = [];
  private readonly waiters = new Set<() => void>();
  private stderr = '';
  readonly exited: Promise<number | null>;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (message: Message) => {
      this.inbox.push(message);
      for (const wake of [...this.waiters]) wake();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-10_000);
    });
    child.stdout?.on('data', () => undefined);
    this.exited = new Promise((resolve) =>
      child.on('exit', (code) => {
        resolve(code);
        for (const wake of [...this.waiters]) wake();
      }),
    );
  }

  /**
   * Starts `file` (a path like `bench/workers/x.worker.ts`): its compiled JavaScript
   * when the benchmark itself runs compiled (dist/bench), else the TypeScript under ts-node.
   */
  static start(name: string, file: string, options: { execArgv?: string[]; args?: string[] } = {}): WorkerProcess {
    const script = path.join(RUN_ROOT, COMPILED ? file.replace(/\.ts$/, '.js') : file);
    const loaders = COMPILED
      ? ['-r', path.join(RUN_ROOT, 'bench', 'paths.js')]
      : ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register'];
    const child = fork(script, options.args ?? [], {
      cwd: REPO_ROOT,
      execArgv: [...(options.execArgv ?? []), ...loaders],
      env: { ...process.env, TS_NODE_PROJECT: path.join(REPO_ROOT, 'tsconfig.json') },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    return new WorkerProcess(name, child);
  }

  send(message: Message): void {
    this.child.send(message);
  }

  /** The next message of `type` (an `error` message from the worker rejects). */
  next(type: string, timeoutMs: number): Promise<Message> {
    return new Promise((resolve, reject) => {
      let exitedCode: number | null | undefined;
      void this.exited.then((code) => (exitedCode = code));
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${this.name}: no "${type}" within ${timeoutMs} ms${this.stderrTail()}`));
      }, timeoutMs);
      const check = (): void => {
        const i = this.inbox.findIndex((m) => m.type === type || m.type === 'error');
        if (i >= 0) {
          const [message] = this.inbox.splice(i, 1);
          clearTimeout(timer);
          this.waiters.delete(check);
          if (message.type === 'error') reject(new Error(String(message.message)));
          else resolve(message);
        } else if (this.child.exitCode !== null || exitedCode !== undefined) {
          clearTimeout(timer);
          this.waiters.delete(check);
          reject(new Error(`${this.name} exited (code ${this.child.exitCode})${this.stderrTail()}`));
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Sends and waits for the reply of `replyType`. */
  async request(message: Message, replyType: string, timeoutMs: number): Promise<Message> {
    this.send(message);
    return this.next(replyType, timeoutMs);
  }

  /** Ends the process at once (a contender that overran its budget: nothing of it may run on). */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    if (this.child.connected) this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }

  private stderrTail(): string {
    const tail = this.stderr.trim().split('\n').slice(-8).join('\n');
    return tail ? `; stderr:\n${tail}` : '';
  }
}

/** In a worker: answers each request with `handle`'s reply, or an `error` message. */
export function serveRequests(handle: (message: Message) => Promise<Message | undefined>): void {
  process.on('message', (message: Message) => {
    handle(message).then(
      (reply) => reply && process.send?.(reply),
      (error: unknown) => process.send?.({ type: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  });
  // The parent went away (or is done): leave.
  process.on('disconnect', () => process.exit(0));
}
