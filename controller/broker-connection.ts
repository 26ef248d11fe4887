/**
 * Connection helpers of the store controller: its client options, the first connect (over a list
 * of brokers), what a refused subscription means, the wait for retained messages after subscribing.
 */
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { BrokerEndpoint } from '../bridge/contract/broker-url.ts';
import { BrokerRotation } from '../bridge/contract/failover.ts';
import { mqttLogOption } from '../bridge/contract/mqtt-log.ts';
import {
  backoffScheduleProblem,
  RECONNECT_STABLE_MS,
  ReconnectBackoff,
} from '../bridge/contract/reconnect-backoff.ts';
import type { Logger } from '../src/logger.ts';
import { CONTROLLER_DEFAULTS } from './types.ts';

/** The controller's mqtt.js options for its first connection (reconnects are turned on after it). */
export function controllerClientOptions(
  clientId: string,
  connectTimeoutMs: number,
  ca: IClientOptions['ca'] | undefined,
): IClientOptions {
  return {
    clientId,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: connectTimeoutMs,
    // A private CA for mqtts:// / wss:// (docs/security.md); the system's CAs otherwise.
    ...(ca && { ca }),
    // Once connected, keep reconnecting after a CONNACK refusal too (a broker restarting with its
    // users not loaded yet, or answering 3 "server unavailable"), as devices do: mqtt.js otherwise
    // stops reconnecting for good. The first connection (reconnectPeriod 0) still fails at once.
    reconnectOnConnackError: true,
    // The controller subscribes again itself after a reconnect, retrying refusals.
    resubscribe: false,
    // A ping every keepalive interval whatever the traffic, instead of mqtt.js clearing and
    // setting its keepalive timer on every PUBACK: a job publishes once per register, so 500
    // timer resets per 500-register job (docs/benchmarks.md, scenario 7).
    reschedulePings: false,
    ...mqttLogOption(),
  };
}

/**
 * The controller's reconnects after its first connection, on the devices' schedule up to `maxMs`
 * (reconnect-backoff.ts). Throws a RangeError for a `maxMs` between 0 and the first delay.
 */
export function controllerBackoff(
  maxMs: number | undefined,
  logger: Logger,
  brokers: number,
): ReconnectBackoff {
  const schedule = {
    firstMs: CONTROLLER_DEFAULTS.reconnectFirstMs,
    maxMs: maxMs ?? CONTROLLER_DEFAULTS.reconnectMaxMs,
  };
  // The constructor's RangeError, named after the controller's option.
  const problem = backoffScheduleProblem(schedule);
  if (problem) throw new RangeError(`reconnectMaxMs: ${problem}`);
  return new ReconnectBackoff({
    brokers,
    ...schedule,
    stableMs: RECONNECT_STABLE_MS,
    onWait: ({ attempt, delayMs }) => logger.debug({ attempt, delayMs }, 'MQTT reconnect scheduled'),
  });
}

/** A refused subscription is almost always a wrong namespace or a user without the controller role. */
export function subscriptionRefusal(
  url: string,
  filters: readonly string[],
  ns: string,
  username: string | undefined,
): string {
  const user = username ?? new URL(url.includes('://') ? url : `mqtt://${url}`).username;
  return (
    `the broker at ${url} refused the subscription to ${filters.join(', ')}: ` +
    `check the namespace (--ns ${ns}; the broker serves one namespace) and that ` +
    `${user ? `user ${decodeURIComponent(user)}` : 'the user'} has the controller role (docs/broker.md, "Roles")`
  );
}

/**
 * The first connection: each broker of the list in turn, once, until one answers CONNACK. A wrong
 * URL or a refusal thus fails fast (`base.reconnectPeriod` should be 0) instead of retrying; the
 * error names every broker tried (without credentials) and why it failed. The rotation returned
 * starts at the broker that answered.
 */
export async function connectFirst(
  endpoints: readonly BrokerEndpoint[],
  base: IClientOptions,
): Promise<{ client: MqttClient; rotation: BrokerRotation }> {
  const failures: string[] = [];
  for (let index = 0; index < endpoints.length; index++) {
    const rotation = new BrokerRotation(endpoints, index);
    const client = connect(rotation.options(base));
    try {
      await firstConnect(client);
      return { client, rotation };
    } catch (error) {
      client.end(true);
      // CONNACK 5 for a known user is mostly a device user: it may hold its register's client id only.
      const hint =
        (error as { code?: unknown }).code === 5
          ? ' (a controller needs a user with the controller role; docs/broker.md, "Connecting")'
          : '';
      failures.push(`${rotation.current.url}: ${(error as Error).message}${hint}`);
    }
  }
  throw new Error(`cannot connect to ${failures.join('; ')}`);
}

/**
 * Resolves on the first CONNACK; rejects on an error (refused, bad credentials) or a close before
 * it. The client is created with reconnectPeriod 0, so a wrong URL fails fast instead of retrying.
 */
export function firstConnect(client: MqttClient): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error): void => {
      client.off('connect', onConnect);
      client.off('error', onError);
      client.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onConnect = (): void => done();
    const onError = (error: Error): void => done(error);
    const onClose = (): void => done(new Error('connection closed before CONNACK'));
    client.on('connect', onConnect);
    client.on('error', onError);
    client.on('close', onClose);
  });
}

/**
 * Waits until `lastActivity()` is at least `quietMs` old (no more retained messages coming), or
 * `maxMs` passed, or cancel() was called. One wait at a time; cancel() clears its timer.
 */
export class QuietWait {
  private timer: NodeJS.Timeout | undefined;
  private finish: (() => void) | undefined;

  /** A new wait ends the one before (resolved at once): one timer, and no wait is left hanging. */
  wait(lastActivity: () => number, quietMs: number, maxMs: number): Promise<void> {
    this.finish?.();
    const giveUpAt = Date.now() + maxMs;
    return new Promise((resolve) => {
      this.finish = () => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        this.finish = undefined;
        resolve();
      };
      const check = (): void => {
        const quietFor = Date.now() - lastActivity();
        if (quietFor >= quietMs || Date.now() >= giveUpAt) this.finish?.();
        else this.timer = setTimeout(check, Math.min(quietMs - quietFor, giveUpAt - Date.now()));
      };
      this.timer = setTimeout(check, quietMs);
    });
  }

  cancel(): void {
    this.finish?.();
  }
}

/**
 * Ends a client the controller is done with, keeping one error listener while it closes. Without
 * a connection or with unacknowledged packets it forces: mqtt.js would otherwise wait for acks
 * that may never come.
 */
export async function endClient(client: MqttClient): Promise<void> {
  for (const event of ['message', 'connect', 'reconnect', 'offline', 'error'] as const)
    client.removeAllListeners(event);
  client.on('error', () => {});
  const unacknowledged = Object.keys(client.outgoing).length > 0;
  await client.endAsync(!client.connected || unacknowledged);
}

/** Puts what mqtt.js has written on the client's socket so far on the wire now. */
export function uncorkAll(client: MqttClient): void {
  const stream = client.stream as { writableCorked?: number; uncork?: () => void } | undefined;
  if (typeof stream?.uncork !== 'function') return;
  // Node counts corks: one uncork per cork; the ticks' own uncorks then find nothing to do.
  while ((stream.writableCorked ?? 0) > 0) stream.uncork();
}
