/**
 * Rollout control of one job (docs/controller.md, "Rollout"): at most `batchSize` registers
 * running the job's script at once, at most `maxPerMinute` sends in any rolling minute. Pure
 * apart from its clock, which tests replace to check the rate without waiting minutes.
 */

/** The clock of rate pacing: real time unless a test gives its own. */
export interface PacingClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: PacingClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export const RATE_WINDOW_MS = 60_000;

export class RolloutGate {
  private readonly batchSize: number;
  private readonly maxPerMinute: number;
  private readonly clock: PacingClock;
  /** Send times inside the current window, oldest first (at most maxPerMinute of them). */
  private readonly sends: number[] = [];

  constructor(rollout: { batchSize?: number; maxPerMinute?: number } | undefined, clock: PacingClock) {
    this.batchSize = rollout?.batchSize ?? Number.POSITIVE_INFINITY;
    this.maxPerMinute = rollout?.maxPerMinute ?? Number.POSITIVE_INFINITY;
    this.clock = clock;
  }

  /**
   * 0: a send may go now; a positive number: the ms until the rate allows the next one;
   * Infinity: the batch is full (wait for a running script to end).
   */
  waitFor(running: number): number {
    if (running >= this.batchSize) return Number.POSITIVE_INFINITY;
    if (!Number.isFinite(this.maxPerMinute)) return 0;
    const now = this.clock.now();
    while (this.sends.length > 0 && this.sends[0]! <= now - RATE_WINDOW_MS) this.sends.shift();
    if (this.sends.length < this.maxPerMinute) return 0;
    return this.sends[0]! + RATE_WINDOW_MS - now;
  }

  /** A script was sent now. */
  record(): void {
    if (Number.isFinite(this.maxPerMinute)) this.sends.push(this.clock.now());
  }

  /** Sends already made before a restart count for the rate too (their times from the history). */
  restore(sentAt: readonly number[]): void {
    if (!Number.isFinite(this.maxPerMinute)) return;
    const from = this.clock.now() - RATE_WINDOW_MS;
    this.sends.push(...sentAt.filter((at) => at > from).sort((a, b) => a - b));
    while (this.sends.length > this.maxPerMinute) this.sends.shift();
  }
}
