/**
 * Makes sure the broker stored the device's retained online state (docs/mqtt.md, "Several
 * brokers"): a clustered broker (nats-server 2.9) may acknowledge a retained PUBLISH it failed to
 * store. After every connect the device subscribes to its own state topic, which resends the
 * retained message ([MQTT-3.8.4-3]); if it is not there in time, the state and held statuses are
 * published again, with backoff.
 */
import type { Logger } from 'pino';
import { type Backoff, backoffDelay } from './contract/subscribe-retry.ts';
import { stateSchema } from './contract/topics.ts';

/** How long one round waits for the PUBACK and the retained state read back. */
export const DEFAULT_STATE_CHECK_WAIT_MS = 1500;

export interface StateCheckOptions {
  bootId: string;
  logger: Logger;
  /** Publishes the online state (retained); `onAck` when the broker acknowledged it. */
  publishState: (onAck: () => void) => void;
  /** Publishes the status of every held task again. */
  republishStatuses: () => void;
  /** Subscribes afresh to the device's own state topic (QoS 0): the broker sends the retained one. */
  readBack: () => void;
  waitMs?: number;
  backoff?: Backoff;
}

export class RetainedStateCheck {
  readonly #options: StateCheckOptions;
  #timer: NodeJS.Timeout | undefined;
  /** The connection being checked; a new connect (or end) makes older callbacks stale. */
  #epoch = 0;
  #round = 0;
  #reading = false;
  /** Rounds that found the state missing, over the boot (tests, logs). */
  misses = 0;
  confirmed = false;

  constructor(options: StateCheckOptions) {
    this.#options = options;
  }

  /** At every connect: publishes the state and starts reading it back. */
  begin(): void {
    this.#clear();
    this.#epoch += 1;
    this.#round = 0;
    this.confirmed = false;
    this.#startRound(this.#epoch);
  }

  /** The connection closed, or the bridge stops: no more rounds. */
  end(): void {
    this.#clear();
    this.#epoch += 1;
    this.#reading = false;
  }

  /** A message on the device's own state topic. */
  handle(payload: Buffer, retain: boolean): void {
    if (!this.#reading || !retain || payload.length === 0) return;
    let parsed: ReturnType<typeof stateSchema.safeParse>;
    try {
      parsed = stateSchema.safeParse(JSON.parse(payload.toString('utf8')));
    } catch {
      return;
    }
    if (!parsed.success || !parsed.data.online || parsed.data.bootId !== this.#options.bootId) return;
    this.#clear();
    this.#reading = false;
    this.confirmed = true;
    if (this.#round > 1) {
      this.#options.logger.warn(
        { rounds: this.#round },
        'retained state stored after retrying; statuses again',
      );
      this.#options.republishStatuses();
    }
  }

  #startRound(epoch: number): void {
    this.#round += 1;
    const round = this.#round;
    this.#reading = false;
    if (round > 1) this.#options.republishStatuses();
    this.#options.publishState(() => {
      if (epoch !== this.#epoch || round !== this.#round || this.confirmed) return;
      this.#reading = true;
      this.#options.readBack();
    });
    this.#timer = setTimeout(() => this.#missed(epoch), this.#options.waitMs ?? DEFAULT_STATE_CHECK_WAIT_MS);
  }

  #missed(epoch: number): void {
    this.#timer = undefined;
    if (epoch !== this.#epoch || this.confirmed) return;
    this.misses += 1;
    this.#reading = false;
    const delay = backoffDelay(this.#round, this.#options.backoff);
    this.#options.logger.warn(
      { round: this.#round, retryInMs: delay },
      'retained state not read back from the broker; publishing state and statuses again',
    );
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (epoch === this.#epoch) this.#startRound(epoch);
    }, delay);
  }

  #clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
