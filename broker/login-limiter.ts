/**
 * Failed MQTT logins limited per remote address and per user name (the security baseline):
 * after `maxFailures` failures within `windowMs`, further attempts from that address, or for that
 * user name, are refused without looking at the password until the oldest failure leaves the
 * window. A success clears the failures of its own user name only: never those of its address,
 * so knowing one valid login does not buy unlimited guesses at another (the bypass the
 * hardening review found). Memory is bounded by AttemptLimiter (src/auth/attempt-limiter.ts).
 */
import { AttemptLimiter } from '../src/auth/attempt-limiter.ts';

export interface LoginLimits {
  maxFailures: number;
  windowMs: number;
  now?: () => number;
}

export class LoginLimiter {
  readonly #byAddress: AttemptLimiter;
  readonly #byName: AttemptLimiter;

  constructor(limits: LoginLimits) {
    const options = {
      maxFailures: limits.maxFailures,
      windowMs: limits.windowMs,
      ...(limits.now && { now: limits.now }),
    };
    this.#byAddress = new AttemptLimiter(options);
    this.#byName = new AttemptLimiter(options);
  }

  start(): void {
    this.#byAddress.start();
    this.#byName.start();
  }

  stop(): void {
    this.#byAddress.stop();
    this.#byName.stop();
  }

  /** What blocks an attempt now, or undefined when it may go ahead. */
  blocked(address: string | undefined, name: string | undefined): 'address' | 'user' | undefined {
    if (address !== undefined && this.#byAddress.retryAfterSeconds(address) > 0) return 'address';
    if (name && this.#byName.retryAfterSeconds(name) > 0) return 'user';
    return undefined;
  }

  failure(address: string | undefined, name: string | undefined): void {
    if (address !== undefined) this.#byAddress.recordFailure(address);
    if (name) this.#byName.recordFailure(name);
  }

  success(name: string): void {
    this.#byName.recordSuccess(name);
  }
}
