/**
 * Uses a provider outside Nest, as a plain script would, with nothing else keeping
 * the event loop alive (no IPC channel, no timer of its own), and prints what it
 * got to. Run with stdout piped, never with an IPC channel (that would keep the
 * process alive and hide the problem).
 *   MODE=close  acquire, release, `await provider.close()`, print "closed"
 *   MODE=idle   acquire, release, print "idle", and leave the provider open: the
 *               process must still exit on its own (idle sessions never keep it alive)
 * Env: DATABASE_URL, KEY_PREFIX, MODE.
 */
// Deep import: a script that loads only what it uses starts in half the time.
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';

async function main(): Promise<void> {
  const provider = new PostgresLockProvider({
    connectionString: process.env.DATABASE_URL,
    keyPrefix: process.env.KEY_PREFIX,
    // Long enough that an idle session keeping the process alive would show as a hang.
    idleTimeoutMs: 120_000,
  });
  const lock = await provider.acquire('close:a');
  await lock.release();
  if (process.env.MODE === 'idle') {
    process.stdout.write('idle\n');
    return;
  }
  await provider.close();
  process.stdout.write('closed\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`failed: ${String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
