/**
 * SUBSCRIBE until granted, with backoff (docs/mqtt.md, "Several brokers"): a clustered broker
 * refuses subscriptions for a while after losing a node (docs/topology.md). Each filter is retried
 * while its connection lasts and the time budget allows. mqtt.js is a type here only (the
 * `regbridge/contract` entry loads zod only).
 */
import type { MqttClient } from 'mqtt';

/** Waits between attempts: first, doubled each attempt, never above max. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
}

export const DEFAULT_SUBSCRIBE_BACKOFF: Backoff = { firstMs: 250, maxMs: 4000 };

/** The wait before attempt `attempt + 1` (attempt counts from 1). */
export function backoffDelay(attempt: number, backoff: Backoff = DEFAULT_SUBSCRIBE_BACKOFF): number {
  return Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.max(0, attempt - 1));
}

export interface SubscribeRetryLog {
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface SubscribeRequest {
  filters: readonly string[];
  qos: 0 | 1;
  /** MQTT 5 Retain As Published. */
  rap?: boolean;
  /** Give up after this long (ms, from the first attempt); no budget: retry while `alive`. */
  budgetMs?: number;
  /** False once the connection the SUBSCRIBE went out on is gone (a reconnect subscribes anew). */
  alive: () => boolean;
}

/**
 * One per client. subscribe() resolves with the filters not granted (budget spent, or the
 * connection gone); cancel() ends every wait at once (stop()).
 */
export class SubscribeRetry {
  readonly #client: MqttClient;
  readonly #log: SubscribeRetryLog;
  readonly #backoff: Backoff;
  readonly #waits = new Map<NodeJS.Timeout, () => void>();
  #cancelled = false;
  /** SUBSCRIBE attempts refused or failed so far (tests, health). */
  failures = 0;

  constructor(client: MqttClient, log: SubscribeRetryLog, backoff: Backoff = DEFAULT_SUBSCRIBE_BACKOFF) {
    this.#client = client;
    this.#log = log;
    this.#backoff = backoff;
  }

  async subscribe(request: SubscribeRequest): Promise<string[]> {
    const deadline =
      request.budgetMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + request.budgetMs;
    const failed = await Promise.all(request.filters.map((filter) => this.#one(filter, request, deadline)));
    return failed.filter((filter): filter is string => filter !== undefined);
  }

  cancel(): void {
    this.#cancelled = true;
    for (const [timer, wake] of this.#waits) {
      clearTimeout(timer);
      wake();
    }
    this.#waits.clear();
  }

  /** undefined once granted; the filter when given up. */
  async #one(filter: string, request: SubscribeRequest, deadline: number): Promise<string | undefined> {
    for (let attempt = 1; ; attempt++) {
      const problem = await this.#attempt(filter, request);
      if (problem === undefined) {
        if (attempt > 1) this.#log.warn({ filter, attempts: attempt }, 'subscription granted after retrying');
        return undefined;
      }
      this.failures += 1;
      if (this.#cancelled || !request.alive()) return filter;
      const delay = backoffDelay(attempt, this.#backoff);
      if (Date.now() + delay > deadline) {
        this.#log.error({ filter, attempts: attempt, err: problem }, 'subscription not granted; giving up');
        return filter;
      }
      this.#log.warn(
        { filter, attempt, retryInMs: delay, err: problem },
        'subscription not granted; retrying',
      );
      await this.#sleep(delay);
      if (this.#cancelled || !request.alive()) return filter;
    }
  }

  /** One SUBSCRIBE: undefined when granted, else why not. */
  #attempt(filter: string, request: SubscribeRequest): Promise<string | undefined> {
    return new Promise((resolve) => {
      const options = { qos: request.qos, ...(request.rap && { rap: true }) };
      this.#client.subscribe(filter, options, (error, granted) => {
        // mqtt.js reports a SUBACK refusal as "Subscribe error: Unspecified error", with the
        // SUBACK packet attached; the reason code says more.
        const suback = (error as (Error & { packet?: { granted?: unknown[] } }) | null)?.packet?.granted;
        const code = [...(suback ?? []), ...(granted ?? []).map((g) => g.qos)].find(
          (c): c is number => typeof c === 'number' && c >= 0x80,
        );
        if (code !== undefined) resolve(`refused by the broker (SUBACK 0x${code.toString(16)})`);
        else if (error) resolve(error.message);
        else resolve(undefined);
      });
    });
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waits.delete(timer);
        resolve();
      }, ms);
      this.#waits.set(timer, resolve);
    });
  }
}
