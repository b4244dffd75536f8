import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A child process that spins one core until stopped: a busy host next to the
 * test. Resolves once the child is spinning.
 */
export class CpuHog {
  private constructor(private readonly child: ChildProcess) {}

  static async start(): Promise<CpuHog> {
    const child = spawn(process.execPath, ['-e', "process.send('spinning', () => { for (;;) {} })"], {
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`the CPU hog exited (${code}) before it spun`)));
    });
    return new CpuHog(child);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGKILL');
    await exited;
  }
}
