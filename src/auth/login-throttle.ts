/**
 * The failed-login limits every login shares (docs/decisions/login-lockout.md): REST, dashboard
 * and the store broker. Per address and per user name; the name's limit slows, never locks (one
 * guess per address per window, none refused from an address the name logged in from). Callers
 * turn a refusal into their own answer (429, CONNACK 3).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { AttemptLimiter } from './attempt-limiter.ts';
import { TrustedAddresses } from './trusted-addresses.ts';

export interface LoginThrottleOptions {
  /** Failures per remote address within `windowMs` before its refusals. */
  maxFailures: number;
  /** Failures per user name within `windowMs` before each address gets one guess at it. */
  userMaxFailures: number;
  windowMs: number;
  maxAddresses?: number;
  now?: () => number;
}

export interface LoginRefusal {
  by: 'address' | 'user';
  retryAfterSeconds: number;
}

/** Stands for a caller whose address is unknown (a transport that does not tell). */
const NO_ADDRESS = '?';

export class LoginThrottle {
  readonly #byAddress: AttemptLimiter;
  readonly #byUser: AttemptLimiter;
  /** One failure per user name and address: what refuses a guess once the name is over its limit. */
  readonly #byPair: AttemptLimiter;
  readonly #trusted = new TrustedAddresses();
  /** Key of digest(): a per-process secret, so a logged digest cannot be brute-forced. */
  readonly #digestKey = randomBytes(32);

  constructor(options: LoginThrottleOptions) {
    const common = {
      windowMs: options.windowMs,
      ...(options.maxAddresses !== undefined && { maxAddresses: options.maxAddresses }),
      ...(options.now && { now: options.now }),
    };
    this.#byAddress = new AttemptLimiter({ ...common, maxFailures: options.maxFailures });
    this.#byUser = new AttemptLimiter({ ...common, maxFailures: options.userMaxFailures });
    this.#byPair = new AttemptLimiter({ ...common, maxFailures: 1 });
  }

  /**
   * A keyed digest of a user name (16 hex characters, stable for the process): kept instead of the
   * name, and loggable, since the name may be a mistyped password.
   */
  digest(userName: string): string {
    return createHmac('sha256', this.#digestKey).update(userName, 'utf8').digest('hex').slice(0, 16);
  }

  start(): void {
    this.#byAddress.start();
    this.#byUser.start();
    this.#byPair.start();
  }

  stop(): void {
    this.#byAddress.stop();
    this.#byUser.stop();
    this.#byPair.stop();
    this.#trusted.clear();
  }

  /** What refuses an attempt at `userName` from `address` now (the password unchecked), or undefined. */
  refusal(address: string | undefined, userName: string): LoginRefusal | undefined {
    const userKey = this.digest(userName);
    const from = address ?? NO_ADDRESS;
    const byAddress = address === undefined ? 0 : this.#byAddress.retryAfterSeconds(address);
    const userOver = this.#byUser.retryAfterSeconds(userKey) > 0;
    const byUser =
      userOver && !this.#trusted.has(userKey, from)
        ? this.#byPair.retryAfterSeconds(`${userKey} ${from}`)
        : 0;
    const retryAfterSeconds = Math.max(byAddress, byUser);
    if (retryAfterSeconds === 0) return undefined;
    return { by: byAddress >= byUser ? 'address' : 'user', retryAfterSeconds };
  }

  failure(address: string | undefined, userName: string): void {
    const userKey = this.digest(userName);
    if (address !== undefined) this.#byAddress.recordFailure(address);
    this.#byUser.recordFailure(userKey);
    this.#byPair.recordFailure(`${userKey} ${address ?? NO_ADDRESS}`);
  }

  /** `userName` logged in from `address`: its failures are cleared and the address spared from now on. */
  success(address: string | undefined, userName: string): void {
    const userKey = this.digest(userName);
    const from = address ?? NO_ADDRESS;
    this.#byUser.recordSuccess(userKey);
    this.#byPair.recordSuccess(`${userKey} ${from}`);
    if (address !== undefined) this.#trusted.add(userKey, address);
  }
}
