/**
 * The device side of docs/mqtt.md: connects the task queue to an MQTT broker (mqtt.js 5) with a
 * retained online state and last will, task statuses, script and cancel intake, and a sweep of
 * stale status topics. bridge-components.ts builds the parts and routes messages to them.
 */

import { randomUUID } from 'node:crypto';
import { connect, type IPublishPacket, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { MqttHealth } from '../src/health.ts';
import { disableMqttPacketNumberCache } from '../src/mqtt-packet-cache.ts';
import { type BridgeParts, createBridgeParts, routeMessage } from './bridge-components.ts';
import { type BridgeBacklog, type BridgePhase, bridgeBacklog, bridgeHealth } from './bridge-health.ts';
import { BRIDGE_DEFAULTS, type DeviceBridgeOptions } from './bridge-options.ts';
import {
  brokerRotation,
  deviceBackoff,
  deviceClientOptions,
  disconnectCleanly,
  offlineState,
  publishOnlineState,
} from './broker-session.ts';
import { subscribeCommands } from './command-subscriptions.ts';
import { attributesSchema } from './contract/attributes.ts';
import type { BrokerRotation } from './contract/failover.ts';
import { logClientErrors } from './contract/mqtt-log.ts';
import type { ReconnectBackoff } from './contract/reconnect-backoff.ts';
import { SubscribeRetry } from './contract/subscribe-retry.ts';
import { ALL_GROUP, assertId, assertNamespace, topics } from './contract/topics.ts';
import { waitForFirstConnect } from './first-connect.ts';
import { ProtocolNegotiation } from './protocol-negotiation.ts';
import { TaskEventFeed } from './task-event-feed.ts';

export type { DeviceBridgeOptions };

export class DeviceBridge {
  readonly bootId = randomUUID();
  private readonly options: DeviceBridgeOptions;
  private readonly logger: Logger;
  /** The broker list (one URL, or several to fail over between) and the one in use. */
  private readonly rotation: BrokerRotation;
  private readonly negotiation: ProtocolNegotiation;
  /** When the bridge last was without a connection (for /health's `offlineMs`); undefined: connected. */
  private offlineSince: number | undefined;
  /** The growing, jittered waits between reconnect attempts (contract/reconnect-backoff.ts). */
  private readonly backoff: ReconnectBackoff;
  private client: MqttClient | undefined;
  /** SUBSCRIBEs refused or failed by the broker are sent again, with backoff (subscribe-retry.ts). */
  private subscriptions: SubscribeRetry | undefined;
  /** Counts connections: a retry belongs to the connection it started on. */
  private connections = 0;
  private phase: BridgePhase = 'idle';
  private everConnected = false;
  /** A new connection logs its first error at warn again (contract/mqtt-log.ts, logClientErrors). */
  private resetErrorLog: () => void = () => {};
  /** The device's groups, `all` included. */
  private readonly groups: string[];
  /** Metrics, status publisher, intakes, sweeper, presence guard, state check (bridge-components.ts). */
  private readonly parts: BridgeParts;
  private startedAt: Date | undefined;
  /** start() resolves once the script subscriptions of the first connection are acknowledged. */
  private firstSubscribed: Promise<void> | undefined;
  /** Every subscription was granted once: a resumed session holds them (else subscribe again). */
  private commandsGranted = false;
  /** Clears start()'s time-out (first-connect.ts). */
  private cancelStartTimer: (() => void) | undefined;
  /** The queue's task events to the status publisher and the audit, from start() to stop(). */
  private readonly taskEvents: TaskEventFeed;

  /** Checks the namespace, ids and URLs (throws on bad ones) and builds every part; connects nothing. */
  constructor(options: DeviceBridgeOptions) {
    disableMqttPacketNumberCache(); // 6 MiB of packet-id buffers (src/mqtt-packet-cache.ts)
    const o = options;
    this.options = o;
    assertNamespace(o.ns);
    assertId('device', o.deviceId);
    for (const group of o.groups) assertId('group', group);
    if (o.attributes !== undefined) {
      const checked = attributesSchema.safeParse(o.attributes);
      if (!checked.success) throw new Error(`invalid attributes: ${checked.error.issues[0]?.message}`);
    }
    const rotation = brokerRotation(o);
    this.rotation = rotation;
    this.groups = [...new Set([ALL_GROUP, ...o.groups])];
    const logger = o.logger.child({ component: 'mqtt-bridge', deviceId: o.deviceId, bootId: this.bootId });
    this.logger = logger;
    const negotiation = new ProtocolNegotiation(
      o.protocolVersion ?? BRIDGE_DEFAULTS.protocolVersion,
      logger,
      () => rotation.current.url,
    );
    this.negotiation = negotiation;
    this.backoff = deviceBackoff(o, logger, () => rotation.current.url, rotation.endpoints.length);
    this.parts = createBridgeParts({
      options: o,
      bootId: this.bootId,
      logger,
      protocolVersion: () => negotiation.current,
      client: () => this.client,
      connected: () => this.phase === 'connected',
      republish: (onAck) => this.publishOnline(onAck),
      auditRetained: o.auditRetained ?? rotation.endpoints.length > 1,
    });
    this.taskEvents = new TaskEventFeed(o.queue, this.parts);
  }

  /**
   * Connects. Resolves once connected the first time, or after `startTimeoutMs` with the broker
   * still unreachable (logged; mqtt.js keeps retrying in the background, the REST side works
   * meanwhile). Rejects, and gives up, on a CONNACK refusal retrying cannot fix (bad
   * credentials, not authorised, unsupported protocol version, client id rejected).
   */
  async start(): Promise<void> {
    if (this.phase !== 'idle') throw new Error('DeviceBridge.start() called twice');
    const { options: o, rotation, negotiation, parts, logger } = this;
    this.startedAt = o.startedAt ?? new Date();
    this.taskEvents.attach();

    this.phase = 'connecting';
    this.offlineSince = Date.now();
    const client = connect(
      deviceClientOptions({
        ns: o.ns,
        deviceId: o.deviceId,
        bootId: this.bootId,
        protocolVersion: negotiation.initial,
        endpoint: rotation.current,
        ...(o.clientId !== undefined && { clientId: o.clientId }),
        ...(o.reconnectPeriodMs !== undefined && { reconnectPeriodMs: o.reconnectPeriodMs }),
        ...(o.ca && { ca: o.ca }),
        ...(o.cert && o.key && { cert: o.cert, key: o.key }),
      }),
    );
    this.client = client;
    this.subscriptions = new SubscribeRetry(client, logger);
    // Several URLs: every reconnect attempt goes to the next broker (a stopped instance's devices
    // move to another one); the session, if the brokers share one, is resumed there.
    rotation.attach(client);
    this.backoff.attach(client);
    // After the rotation: at a reconnect it picks the protocol for the broker the rotation chose.
    negotiation.attach(client);
    parts.link.attach(client);
    // Before the first-connect listeners: wire()'s connect handler must run first and subscribe.
    this.wire(client, logger);
    const first = waitForFirstConnect(client, {
      ready: () => this.firstSubscribed ?? Promise.resolve(),
      timeoutMs: o.startTimeoutMs ?? BRIDGE_DEFAULTS.startTimeoutMs,
      onTimeout: () =>
        logger.warn({ urls: rotation.urls }, 'MQTT broker not reachable yet; retrying in the background'),
      recoverable: (error) => negotiation.recoverable(error),
      onFatal: (error) => {
        this.detach();
        this.subscriptions?.cancel();
        this.parts.stateCheck.end();
        this.phase = 'stopped';
        client.end(true);
        return new Error(`MQTT broker ${this.url} refused the connection: ${error.message}`);
      },
    });
    this.cancelStartTimer = first.cancelTimer;
    await first.done;
  }

  /**
   * Publishes the offline state and disconnects cleanly (the broker drops the will), waiting briefly
   * for in-flight messages. Stop the queue first, so the aborted task's final status goes out too.
   */
  async stop(): Promise<void> {
    if (this.phase === 'stopped' || this.phase === 'idle') {
      this.phase = 'stopped';
      return;
    }
    this.phase = 'stopped';
    this.detach();
    this.rotation.detach();
    this.negotiation.detach();
    this.parts.sweeper.end();
    this.parts.stateCheck.end();
    this.parts.audit?.end();
    this.subscriptions?.cancel();
    const client = this.client;
    if (!client) return;
    const wasOnline = this.parts.link.online;
    this.parts.link.close();
    const { ns, deviceId } = this.options;
    await disconnectCleanly(
      client,
      topics.state(ns, deviceId),
      wasOnline ? offlineState(deviceId, this.bootId) : undefined,
    );
    if (wasOnline) this.parts.metrics.countOut('state');
  }

  /** The broker in use (or tried next), without credentials. */
  private get url(): string {
    return this.rotation.current.url;
  }

  health(): MqttHealth {
    const { phase, negotiation, parts } = this;
    const url = this.startedAt ? this.url : undefined;
    const reconnect = this.backoff.nextAttempt;
    return bridgeHealth({
      phase,
      url,
      protocolVersion: negotiation.current,
      parts,
      reconnect,
      offlineSince: this.offlineSince,
    });
  }

  /** The bridge's flow control (docs/mqtt.md, "Backpressure"; bridge-health.ts). */
  backlog(): BridgeBacklog {
    return bridgeBacklog(this.parts);
  }

  /**
   * Test hook: drops the TCP connection without DISCONNECT, as a crash or cable pull would; the
   * broker then publishes the last will, and mqtt.js reconnects.
   */
  simulateConnectionLoss(): void {
    this.client?.stream.destroy();
  }

  private wire(client: MqttClient, logger: Logger): void {
    client.on('connect', (connack) => this.onConnect(client, logger, connack.sessionPresent));
    client.on('close', () => {
      const reconnectInMs = client.options.reconnectPeriod; // chosen by the backoff (contract/reconnect-backoff.ts)
      if (this.parts.link.online)
        logger.warn({ url: this.url, reconnectInMs }, 'MQTT connection lost; reconnecting');
      this.parts.link.connectionLost();
      this.parts.stateCheck.end();
      if (this.phase === 'connected') {
        this.phase = 'reconnecting';
        this.offlineSince = Date.now();
      }
    });
    client.on('reconnect', () => {
      if (this.phase !== 'stopped' && this.everConnected) this.phase = 'reconnecting';
    });
    // The store broker (aedes) refuses MQTT 5 with CONNACK 1: the fallback's cue, not a fault.
    this.resetErrorLog = logClientErrors(
      client,
      logger,
      () => this.url,
      (error) => this.negotiation.recoverable(error),
    );
    client.on('message', (topic, payload, packet) =>
      this.onMessage(client, logger, { topic, payload, packet }),
    );
  }

  private onConnect(client: MqttClient, logger: Logger, sessionPresent: boolean | undefined): void {
    if (this.phase === 'stopped') return;
    const first = !this.everConnected;
    this.everConnected = true;
    this.connections += 1;
    this.parts.link.markConnected();
    this.phase = 'connected';
    this.offlineSince = undefined;
    this.resetErrorLog();
    logger.info({ url: this.url, sessionPresent, reconnect: !first }, 'MQTT connected');
    const o = this.options;
    // The online state, read back until the broker has stored it (state-check.ts).
    this.parts.stateCheck.begin();
    // A resumed session keeps the subscriptions ([MQTT-3.1.2-4]); a new one needs them again, and
    // so does one whose subscribing was cut short (commandsGranted).
    if (first || !sessionPresent || !this.commandsGranted) {
      const subscribed = this.subscribeCommands(client);
      if (first) this.firstSubscribed = subscribed;
    }
    if (first) this.parts.sweeper.begin();
    // docs/mqtt.md: after a reconnect, republish the status of every task held.
    this.parts.statuses.flush(o.queue.list());
  }

  private publishOnline(onAck?: () => void): void {
    const o = this.options;
    publishOnlineState(
      this.parts.link,
      o.ns,
      {
        deviceId: o.deviceId,
        bootId: this.bootId,
        installation: o.installation,
        version: o.version,
        startedAt: (this.startedAt ?? new Date()).toISOString(),
        groups: this.groups,
        ...(o.attributes !== undefined &&
          Object.keys(o.attributes).length > 0 && { attributes: { ...o.attributes } }),
      },
      onAck,
    );
  }

  /** The device's script, cancel and state subscriptions, for this connection (command-subscriptions.ts). */
  private subscribeCommands(client: MqttClient): Promise<void> {
    const retry = this.subscriptions;
    if (!retry) return Promise.resolve();
    const connection = this.connections;
    const { ns, deviceId } = this.options;
    this.commandsGranted = false;
    return subscribeCommands(retry, {
      ns,
      deviceId,
      groups: this.groups,
      protocolVersion: client.options.protocolVersion,
      alive: () => this.phase === 'connected' && this.connections === connection,
    }).then((missing) => {
      // Only this connection's answer counts: a later one may be subscribing on a new session.
      if (missing.length === 0 && this.connections === connection) this.commandsGranted = true;
    });
  }

  private onMessage(
    client: MqttClient,
    logger: Logger,
    message: { topic: string; payload: Buffer; packet: IPublishPacket },
  ): void {
    if (this.phase === 'stopped') return;
    const { ns, deviceId } = this.options;
    routeMessage(this.parts, { ns, deviceId, groups: this.groups }, client, logger, message);
  }

  private detach(): void {
    this.backoff.detach();
    this.cancelStartTimer?.();
    this.cancelStartTimer = undefined;
    this.taskEvents.detach();
  }
}
