/**
 * Waiting for something in tests and benchmarks without fixed sleeps: an event (once) where one
 * is emitted, polling (until) only for a condition no event announces (a queue count, a child
 * process gone, a bridge's health).
 */
import type { EventEmitter } from 'node:events';

/** Polls `condition` every `intervalMs` until it holds; fails after `timeoutMs`, naming `what`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what = 'the condition',
  timeoutMs = 10_000,
  intervalMs = 5,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * The arguments of the next `event` of `emitter` for which `matches` holds; fails after
 * `timeoutMs`. The listener is removed either way.
 */
export function onceEvent<T extends unknown[] = unknown[]>(
  emitter: EventEmitter,
  event: string,
  what: string,
  options: { timeoutMs?: number; matches?: (...args: T) => boolean } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    function listener(...args: unknown[]): void {
      if (options.matches && !options.matches(...(args as T))) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(args as T);
    }
    emitter.on(event, listener);
  });
}
