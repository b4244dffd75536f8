import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './repo-root';

/** One way of the bench's network variant: what a round trip between two hosts adds, 0.25 ms each way. */
export const NET_DELAY_US = 250;

const SOURCE = path.join(REPO_ROOT, 'bench', 'net', 'delay-proxy.c');
const BINARY = path.join(REPO_ROOT, '.cache', 'bench', 'delay-proxy');

/** A running delay proxy in front of one backend. */
export interface DelayProxy {
  readonly port: number;
  /** `url` (redis://… or postgres://…) pointed at the proxy instead of the backend. */
  via(url: string): string;
  stop(): Promise<void>;
}

/** Compiles bench/net/delay-proxy.c once (gcc; recompiled when the source is newer). */
function binary(): string {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs) return BINARY;
  mkdirSync(path.dirname(BINARY), { recursive: true });
  try {
    execFileSync('gcc', ['-O2', '-o', BINARY, SOURCE], { stdio: 'pipe' });
  } catch (error) {
    throw new Error(`the network variant needs gcc to build its delay proxy (Debian: apt-get install gcc): ${(error as Error).message}`, {
      cause: error,
    });
  }
  return BINARY;
}

/**
 * Starts a proxy that delays every byte by `delayUs` in each direction in front of
 * the backend of `url` (a small C program: sub-millisecond delays without a
 * spinning process beside the contenders).
 */
export async function startDelayProxy(url: string, delayUs = NET_DELAY_US): Promise<DelayProxy> {
  const target = new URL(url);
  const host = target.hostname === 'localhost' || target.hostname === '' ? '127.0.0.1' : target.hostname;
  const targetPort = target.port || (target.protocol.startsWith('redis') ? '6379' : '5432');
  const child: ChildProcess = spawn(binary(), ['0', host, targetPort, String(delayUs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the delay proxy exited (code ${code}) before it listened`)));
  });
  return {
    port,
    via: (original) => {
      const proxied = new URL(original);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(port);
      return proxied.toString();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
