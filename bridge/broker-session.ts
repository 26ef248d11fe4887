/**
 * The device bridge's MQTT connection (docs/mqtt.md): mqtt.js options (a stable client id
 * with a persistent session, the offline state as last will, reconnection forever), the state
 * payloads and their publishing, the broker list, subscribing, and the clean disconnect.
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { BridgeLink } from './bridge-link.ts';
import { BRIDGE_DEFAULTS, type DeviceBridgeOptions } from './bridge-options.ts';
import { type BrokerEndpoint, parseBrokerUrls } from './contract/broker-url.ts';
import { applyEndpoint, BrokerRotation } from './contract/failover.ts';
import { mqttLogOption } from './contract/mqtt-log.ts';
import { ReconnectBackoff } from './contract/reconnect-backoff.ts';
import { deviceClientId, type OfflineState, type OnlineState, topics } from './contract/topics.ts';
import { SESSION_EXPIRY_SECONDS } from './protocol-negotiation.ts';

export interface ClientOptionsInput {
  ns: string;
  deviceId: string;
  bootId: string;
  protocolVersion: 4 | 5;
  /** The broker of the first attempt (bridge/contract/failover.ts moves the client on at reconnects). */
  endpoint: BrokerEndpoint;
  clientId?: string;
  reconnectPeriodMs?: number;
  /** Private CA for TLS brokers (`--mqtt-ca`). */
  ca?: Buffer;
  /** Client certificate and key for TLS brokers with device certificates (`--mqtt-cert`, `--mqtt-key`). */
  cert?: Buffer;
  key?: Buffer;
}

/** `regbridge_<ns with / as _>_<deviceId>`: stable across restarts, distinct per namespace. */
export const defaultClientId = deviceClientId;

export function offlineState(deviceId: string, bootId: string): OfflineState {
  return { online: false, deviceId, bootId };
}

export function deviceClientOptions(input: ClientOptionsInput): IClientOptions {
  const { ns, deviceId, bootId, protocolVersion, endpoint } = input;
  // A fresh object per client: mqtt.js keeps and changes the one it is given.
  const options: IClientOptions = {
    clientId: input.clientId ?? defaultClientId(ns, deviceId),
    protocolVersion,
    // A persistent session: scripts published while the device is offline wait at the broker
    // (QoS 1) and arrive when it connects again; notAfter keeps stale ones from running.
    clean: false,
    // MQTT 5 ends a session at disconnect unless told otherwise ([MQTT-3.1.2-23]): keep a week.
    ...(protocolVersion === 5 && { properties: { sessionExpiryInterval: SESSION_EXPIRY_SECONDS } }),
    // The first wait; deviceBackoff() sets every later one (growing, jittered) on the client.
    reconnectPeriod: input.reconnectPeriodMs ?? BRIDGE_DEFAULTS.reconnectPeriodMs,
    // A private CA for mqtts:// / wss:// (docs/security.md); the system's CAs otherwise.
    ...(input.ca && { ca: input.ca }),
    ...(input.cert && input.key && { cert: input.cert, key: input.key }),
    // Keep trying after a refusal too (a broker restarting with its user list not loaded yet);
    // start() gives up on refusals retrying cannot fix.
    reconnectOnConnackError: true,
    connectTimeout: 10_000,
    keepalive: 30,
    ...mqttLogOption(),
    // The bridge resubscribes itself when the broker has no session (one filter per SUBSCRIBE).
    resubscribe: false,
    will: {
      topic: topics.state(ns, deviceId),
      payload: Buffer.from(JSON.stringify(offlineState(deviceId, bootId))),
      qos: 1,
      retain: true,
    },
  };
  // Protocol, host, port, WebSocket path and credentials of the first broker.
  applyEndpoint(options, endpoint);
  return options;
}

/**
 * The device's reconnect schedule (bridge/contract/reconnect-backoff.ts): each wait is logged at
 * debug (a fleet of thousands would flood the logs at info), with the attempt number and the delay.
 */
export function deviceBackoff(
  input: Pick<DeviceBridgeOptions, 'reconnectPeriodMs' | 'reconnectMaxMs' | 'reconnectStableMs'>,
  logger: Logger,
  url: () => string,
  brokers: number,
): ReconnectBackoff {
  return new ReconnectBackoff({
    brokers,
    firstMs: input.reconnectPeriodMs ?? BRIDGE_DEFAULTS.reconnectPeriodMs,
    maxMs: input.reconnectMaxMs ?? BRIDGE_DEFAULTS.reconnectMaxMs,
    stableMs: input.reconnectStableMs ?? BRIDGE_DEFAULTS.reconnectStableMs,
    onWait: ({ attempt, delayMs }) =>
      logger.debug({ url: url(), attempt, delayMs }, 'MQTT reconnect scheduled'),
    onStable: () => logger.debug({ url: url() }, 'MQTT connection stable; reconnect backoff reset'),
  });
}

function onlineState(fields: Omit<OnlineState, 'online'>): OnlineState {
  return { online: true, ...fields };
}

/** The retained online state on `<ns>/devices/<id>/state`; `onAck` once the broker has it. */
export function publishOnlineState(
  link: BridgeLink,
  ns: string,
  fields: Omit<OnlineState, 'online'>,
  onAck?: () => void,
): void {
  link.publish(
    topics.state(ns, fields.deviceId),
    JSON.stringify(onlineState(fields)),
    { retain: true },
    'state',
    (error) => {
      if (!error) onAck?.();
    },
  );
}

/** The broker list of `--mqtt-url` (one URL, or several to fail over between), credentials applied. */
export function brokerRotation(
  o: Pick<DeviceBridgeOptions, 'url' | 'username' | 'password'>,
): BrokerRotation {
  return new BrokerRotation(
    parseBrokerUrls(o.url, {
      ...(o.username !== undefined && { username: o.username }),
      ...(o.password !== undefined && { password: o.password }),
    }),
  );
}

/**
 * One SUBSCRIBE per filter: aedes-persistence-redis 12 never acknowledges a SUBSCRIBE carrying
 * several filters from a persistent session, and a refusal then names its filter. Resolves once
 * every filter is answered; an error or a refusal ([MQTT-3.9.3] 0x80) is logged and reported.
 */
export function subscribeEach(
  client: MqttClient,
  filters: string[],
  logger: Logger,
  qos: 0 | 1 = 1,
  retainAsPublished = false,
): Promise<string[]> {
  const answers = filters.map(
    (filter) =>
      new Promise<string | undefined>((resolve) => {
        client.subscribe(filter, { qos, ...(retainAsPublished && { rap: true }) }, (error, granted) => {
          if (error) logger.error({ filter, err: error.message }, 'subscribing failed');
          else if (granted?.some((g) => g.qos > 2)) logger.error({ filter }, 'broker refused a subscription');
          else return resolve(undefined);
          resolve(filter);
        });
      }),
  );
  return Promise.all(answers).then((failed) => failed.filter((f): f is string => f !== undefined));
}

/**
 * Clean shutdown. Connected: the offline state, retained (DISCONNECT makes the broker drop the
 * will [MQTT-3.14.4-3], so the device says it itself), then a DISCONNECT once unacknowledged QoS 1
 * messages are through, forced if the broker does not answer in time. Not connected: nothing can
 * be acknowledged any more, so the client just ends (and stops reconnecting).
 */
export async function disconnectCleanly(
  client: MqttClient,
  stateTopic: string,
  offline: OfflineState | undefined,
): Promise<void> {
  if (offline) {
    await withTimeout(
      client.publishAsync(stateTopic, JSON.stringify(offline), { qos: 1, retain: true }),
      2000,
    ).catch(() => undefined);
  }
  const ended = await withTimeout(client.endAsync(offline === undefined), 3000).then(
    () => true,
    () => false,
  );
  if (!ended) await client.endAsync(true).catch(() => undefined);
  client.removeAllListeners();
  // mqtt.js may still report a late socket error; without a listener it would be thrown.
  client.on('error', () => undefined);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
