/**
 * Callers waiting for a task to end (long polls, synchronous fm-scripts): woken when the task
 * ends, is evicted, when their time is up or their signal aborts, and all at once when the queue
 * stops. Holds no timer once nobody waits.
 */
export class EndWaiters {
  private readonly waiters = new Map<number, Set<() => void>>();

  /** Resolves when wake(id) is called, after `ms`, or when `signal` aborts. */
  wait(id: number, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiters = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, waiters);
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
  }

  wake(id: number): void {
    const waiters = this.waiters.get(id);
    if (waiters) for (const done of [...waiters]) done();
  }

  wakeAll(): void {
    for (const waiters of [...this.waiters.values()]) for (const done of [...waiters]) done();
    this.waiters.clear();
  }
}
