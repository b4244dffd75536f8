/**
 * Runs `work` with a referenced handle held for its duration, so that the process
 * stays alive until it is done. The lock sessions' sockets and the library's
 * timers are unref'd (an idle provider must never keep a process alive), so
 * without it a script that ends with `await provider.close()` could see Node exit
 * in the middle of that `await`, before the sessions were closed.
 */
export async function keepingProcessAlive<T>(work: () => Promise<T>): Promise<T> {
  const handle = setInterval(() => undefined, 60_000);
  try {
    return await work();
  } finally {
    clearInterval(handle);
  }
}
