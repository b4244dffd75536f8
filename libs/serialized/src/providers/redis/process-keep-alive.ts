/**
 * Runs `work` with a referenced handle held for its duration, so that the process
 * stays alive until it is done. The provider's timers are unref'd (an idle
 * provider must never keep a process alive), so a shutdown step that waits only on
 * them (a leave waiting for the connection, a command bounded by the silence
 * deadline) could otherwise see Node exit in the middle of `await provider.close()`.
 */
export async function keepingProcessAlive<T>(work: () => Promise<T>): Promise<T> {
  const handle = setInterval(() => undefined, 60_000);
  try {
    return await work();
  } finally {
    clearInterval(handle);
  }
}
