/**
 * Failed-authentication limiting per key (docs/api.md: 429 TOO_MANY_ATTEMPTS with `Retry-After`):
 * after `maxFailures` failures within `windowMs` a key is refused until its oldest failure leaves
 * the window. Refused attempts are not counted, so `Retry-After` is exact. Memory is bounded by
 * `maxFailures` per key and `maxAddresses` keys (least recently failing forgotten first).
 */
export const DEFAULT_MAX_ADDRESSES = 10_000;

export interface AttemptLimiterOptions {
  maxFailures: number;
  windowMs: number;
  maxAddresses?: number;
  /** Clock in ms since the epoch; tests inject one to move through the window without sleeping. */
  now?: () => number;
}

export class AttemptLimiter {
  private readonly maxFailures: number;
  private readonly windowMs: number;
  private readonly maxAddresses: number;
  private readonly now: () => number;
  /** Failure times per address, oldest first; Map order is least recently failing first. */
  private readonly failures = new Map<string, number[]>();
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(options: AttemptLimiterOptions) {
    this.maxFailures = options.maxFailures;
    this.windowMs = options.windowMs;
    this.maxAddresses = options.maxAddresses ?? DEFAULT_MAX_ADDRESSES;
    this.now = options.now ?? Date.now;
  }

  start(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => this.sweep(), Math.max(this.windowMs, 1000));
    this.sweepTimer.unref();
  }

  stop(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    this.failures.clear();
  }

  get trackedAddresses(): number {
    return this.failures.size;
  }

  /** Seconds until `address` may try again; 0 when it may try now. */
  retryAfterSeconds(address: string): number {
    const times = this.live(address);
    if (times.length < this.maxFailures) return 0;
    const oldest = times[times.length - this.maxFailures]!;
    return Math.max(1, Math.ceil((oldest + this.windowMs - this.now()) / 1000));
  }

  recordFailure(address: string): void {
    const times = this.live(address);
    times.push(this.now());
    if (times.length > this.maxFailures) times.splice(0, times.length - this.maxFailures);
    // Re-insert so Map order stays "least recently failing first" for the size cap.
    this.failures.delete(address);
    this.failures.set(address, times);
    for (const key of this.failures.keys()) {
      if (this.failures.size <= this.maxAddresses) break;
      this.failures.delete(key);
    }
  }

  recordSuccess(address: string): void {
    this.failures.delete(address);
  }

  /** The failures of `address` still inside the window (expired ones are dropped). */
  private live(address: string): number[] {
    const times = this.failures.get(address);
    if (!times) return [];
    const since = this.now() - this.windowMs;
    let expired = 0;
    while (expired < times.length && times[expired]! <= since) expired += 1;
    if (expired > 0) times.splice(0, expired);
    if (times.length === 0) this.failures.delete(address);
    return times;
  }

  private sweep(): void {
    for (const address of [...this.failures.keys()]) this.live(address);
  }
}
