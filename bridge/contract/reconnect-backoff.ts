/**
 * Reconnect backoff with jitter for mqtt.js clients (docs/mqtt.md;
 * docs/decisions/reconnect-backoff-with-jitter.md). mqtt.js has one fixed `reconnectPeriod` but
 * reads `client.options.reconnectPeriod` whenever it arms its timer, from places no event precedes,
 * so the option always holds the wait to use if what is in progress ended now.
 */
import type { MqttClient } from 'mqtt';

export interface BackoffSchedule {
  /** The first retry waits up to this long (and at least half of it); default 1000 ms. */
  readonly firstMs: number;
  /** No wait exceeds this (ms). 0: every wait is exactly `firstMs`, no growth, no jitter (the fixed period of old). */
  readonly maxMs: number;
}

/** The longest delay a Node timer honours (a longer one fires after 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A connection that lasted this long resets the schedule, for devices and controllers alike:
 * with a 30 s keepalive, mqtt.js and the broker notice a dead connection only after 45 s.
 */
export const RECONNECT_STABLE_MS = 60_000;

/**
 * The wait before attempt `attempt` (1: the first retry), "equal jitter": drawn from
 * [ceiling/2, ceiling) with ceiling `min(maxMs, firstMs * 2^(attempt-1))`, so waits really grow
 * and a fleet that lost the same broker spreads out. `random` returns [0, 1).
 */
export function reconnectDelay(
  attempt: number,
  schedule: BackoffSchedule,
  random: () => number = Math.random,
): number {
  // A first delay of 0 keeps mqtt.js' meaning of a period of 0: never reconnect.
  if (schedule.maxMs === 0 || schedule.firstMs <= 0) return schedule.firstMs;
  // 2^30 times any sane first delay is past every cap: no Infinity for a very long outage.
  const doublings = Math.min(Math.max(attempt, 1) - 1, 30);
  // Node runs a timer longer than 2^31-1 ms after 1 ms instead: a huge cap must not become a loop.
  const ceiling = Math.min(schedule.maxMs, schedule.firstMs * 2 ** doublings, MAX_TIMER_MS);
  // mqtt.js reads a period of 0 as "never reconnect": at least 1 ms.
  return Math.max(1, Math.floor(ceiling / 2 + random() * (ceiling / 2)));
}

export interface ReconnectWait {
  /** 1 for the first retry since the last reset, then 2, 3, ... */
  readonly attempt: number;
  readonly delayMs: number;
}

export interface ReconnectBackoffOptions extends BackoffSchedule {
  /**
   * A connection that lasts this long resets the schedule to the first delay. Not at CONNACK: a
   * broker that accepts connections and then drops them (overloaded, a keepalive it cannot
   * answer) would otherwise be hit at the fastest rate for ever.
   */
  readonly stableMs: number;
  readonly random?: () => number;
  /**
   * How many brokers the client rotates through (one per attempt, bridge/contract/failover.ts):
   * each is tried once at the same delay before the waits grow, so a dead node of a cluster does
   * not slow the move to a live one (docs/mqtt.md, "Several brokers"). Default 1.
   */
  readonly brokers?: number;
  /** A connection or attempt ended and mqtt.js waits `delayMs` before attempt `attempt`. */
  readonly onWait?: (wait: ReconnectWait) => void;
  /** A connection lasted `stableMs`: the next wait is the first retry's again. */
  readonly onStable?: () => void;
}

/**
 * What is wrong with a schedule, or undefined: a cap between 0 ("no backoff") and the first delay
 * could never let the waits grow. The CLI and the library share this rule.
 */
export function backoffScheduleProblem(schedule: BackoffSchedule): string | undefined {
  const { firstMs, maxMs } = schedule;
  if (!Number.isFinite(firstMs) || firstMs < 0)
    return `the first reconnect delay must be >= 0 ms, got ${firstMs}`;
  if (!(maxMs >= 0)) return `the longest reconnect wait must be >= 0 ms, got ${maxMs}`;
  if (maxMs > 0 && firstMs > 0 && maxMs < firstMs)
    return `the longest reconnect wait must be 0 (no backoff) or at least the first delay (${firstMs} ms), got ${maxMs} ms`;
  return undefined;
}

/** Drives `client.options.reconnectPeriod` of one mqtt.js client at a time. */
export class ReconnectBackoff {
  readonly #options: ReconnectBackoffOptions;
  #client: MqttClient | undefined;
  /** The attempt whose wait `client.options.reconnectPeriod` holds now. */
  #attempt = 1;
  #stableTimer: NodeJS.Timeout | undefined;
  /** The attempt waited for or in progress since the connection was lost, and when it is due. */
  #next: { attempt: number; at: number } | undefined;
  readonly #onReconnect = (): void => {
    if (this.#next) this.#next.at = Date.now(); // under way now
    this.#arm(this.#attempt + 1);
  };
  readonly #onConnect = (): void => {
    this.#next = undefined;
    this.#startStableTimer();
  };
  readonly #onClose = (): void => this.#closed();

  /** Throws a RangeError on a schedule backoffScheduleProblem() refuses. */
  constructor(options: ReconnectBackoffOptions) {
    const problem = backoffScheduleProblem(options);
    if (problem) throw new RangeError(problem);
    this.#options = options;
  }

  /**
   * From now on `client` waits by this schedule. Attach before the first attempt can fail (right
   * after connect()), or once connected (the controller turns reconnects on after its first
   * connection): either way the next wait is the first retry's.
   */
  attach(client: MqttClient): void {
    this.detach();
    this.#client = client;
    this.#arm(1);
    client.on('reconnect', this.#onReconnect);
    client.on('connect', this.#onConnect);
    client.on('close', this.#onClose);
    if (client.connected) this.#startStableTimer();
  }

  /**
   * While disconnected: the reconnect attempt mqtt.js waits for (1, 2, ... since the connection
   * was lost) and the milliseconds until it starts (0: under way). Undefined while connected.
   */
  get nextAttempt(): { attempt: number; inMs: number } | undefined {
    const next = this.#next;
    return next && { attempt: next.attempt, inMs: Math.max(0, next.at - Date.now()) };
  }

  detach(): void {
    this.#next = undefined;
    this.#clearStableTimer();
    const client = this.#client;
    if (!client) return;
    client.off('reconnect', this.#onReconnect);
    client.off('connect', this.#onConnect);
    client.off('close', this.#onClose);
    this.#client = undefined;
  }

  /** Sets the wait mqtt.js uses if what is in progress ends now (attempt `attempt`). */
  #arm(attempt: number): void {
    const client = this.#client;
    if (!client) return;
    this.#attempt = attempt;
    const { random, brokers = 1, ...schedule } = this.#options;
    // Retries 1..brokers are the first pass over the list, at the first delay; then the next.
    const pass = Math.floor((attempt - 1) / Math.max(1, brokers)) + 1;
    client.options.reconnectPeriod = reconnectDelay(pass, schedule, random);
  }

  #startStableTimer(): void {
    this.#clearStableTimer();
    this.#stableTimer = setTimeout(() => {
      this.#stableTimer = undefined;
      this.#arm(1);
      this.#options.onStable?.();
    }, this.#options.stableMs);
    // A timer that only resets a schedule must not keep a process alive.
    this.#stableTimer.unref();
  }

  #clearStableTimer(): void {
    if (this.#stableTimer) clearTimeout(this.#stableTimer);
    this.#stableTimer = undefined;
  }

  #closed(): void {
    this.#clearStableTimer();
    const client = this.#client;
    // end() closes too, and then nothing is retried.
    if (!client || client.disconnecting) return;
    const delayMs = client.options.reconnectPeriod ?? 0;
    this.#next = { attempt: this.#attempt, at: Date.now() + delayMs };
    this.#options.onWait?.({ attempt: this.#attempt, delayMs });
  }
}
