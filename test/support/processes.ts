import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { childEntry } from './child-entry';

const ROOT = path.resolve(__dirname, '..', '..');

/** A message a worker process sent with `process.send`. */
export type WorkerMessage = { type: string; [field: string]: unknown };

/**
 * A real OS process running a TypeScript file of the repository (compiled by the
 * global set-up, or under ts-node; see `childEntry`), talking to the test over
 * Node's IPC channel.
 */
export class WorkerProcess {
  readonly messages: WorkerMessage[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly listeners = new Set<() => void>();
  private stderr = '';

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    child.on('message', (message: WorkerMessage) => {
      this.messages.push(message);
      for (const listener of [...this.listeners]) listener();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
      if (this.stderr.length > 20_000) this.stderr = this.stderr.slice(-20_000);
    });
    child.stdout?.on('data', () => undefined);
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Starts `file` (relative to the repository root) with extra environment variables. */
  static start(name: string, file: string, env: Record<string, string> = {}): WorkerProcess {
    const entry = childEntry(file);
    const child = spawn(process.execPath, entry.args, {
      cwd: ROOT,
      env: { ...process.env, ...entry.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    return new WorkerProcess(name, child);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** What the process wrote to stderr (last 20 kB), for failure messages. */
  get errors(): string {
    return this.stderr;
  }

  send(message: WorkerMessage): void {
    this.child.send(message);
  }

  /** Resolves with the first message (already received or future) that matches. */
  waitFor(match: (m: WorkerMessage) => boolean, timeoutMs = 30_000): Promise<WorkerMessage> {
    const found = this.messages.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`${this.name}: no matching message within ${timeoutMs} ms. stderr:\n${this.stderr}`));
      }, timeoutMs);
      const check = (): void => {
        const message = this.messages.find(match);
        if (!message) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve(message);
      };
      this.listeners.add(check);
      void this.exited.then(({ code, signal }) => {
        if (!this.listeners.has(check)) return;
        check();
        if (!this.listeners.has(check)) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        reject(new Error(`${this.name} exited (code ${code}, signal ${signal}) before a matching message. stderr:\n${this.stderr}`));
      });
    });
  }

  waitForType(type: string, timeoutMs?: number): Promise<WorkerMessage> {
    return this.waitFor((m) => m.type === type, timeoutMs);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  /** Kills the process if it still runs and waits until it is gone. */
  async stop(): Promise<void> {
    this.kill('SIGKILL');
    await this.exited;
  }
}
