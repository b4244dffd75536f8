/**
 * Runs `work` with a referenced handle held for its duration, so that the process
 * stays alive until it is done. The network providers' sockets and timers are
 * unref'd (an idle provider must never keep a process alive), so a script that
 * ends with `await provider.close()` could otherwise see Node exit in the middle
 * of that `await`, before the sessions and connections were closed.
 */
export async function keepingProcessAlive<T>(work: () => Promise<T>): Promise<T> {
  const handle = setInterval(() => undefined, 60_000);
  try {
    return await work();
  } finally {
    clearInterval(handle);
  }
}
