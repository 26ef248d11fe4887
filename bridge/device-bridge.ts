/**
 * The device side of contract section 3: connects the task queue to an MQTT broker (mqtt.js 5).
 * - state: retained QoS 1 online message on every (re)connect; the last will (and a clean
 *   shutdown) says offline;
 * - task statuses: one retained QoS 1 message per transition (StatusPublisher);
 * - scripts: intake from the device topic and every group topic (ScriptIntake);
 * - stale status topics of earlier boots are cleared once per boot (StaleStatusSweeper).
 * docs/mqtt.md describes the behaviour for users.
 */
import { randomUUID } from 'node:crypto';
import {
  connect,
  ErrorWithReasonCode,
  type IClientOptions,
  type IPublishPacket,
  type MqttClient,
} from 'mqtt';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { MqttHealth } from '../src/health.ts';
import type { Task } from '../src/tasks/task.ts';
import { statusOf } from '../src/tasks/task.ts';
import type { TaskQueue } from '../src/tasks/task-queue.ts';
import { type BridgeMetrics, bridgeMetrics } from './bridge-metrics.ts';
import { type BrokerEndpoint, parseBrokerUrl } from './broker-url.ts';
import type { BridgeLink, OutKind, PublishOptions } from './link.ts';
import { RequestIdMemory } from './request-ids.ts';
import { ScriptIntake } from './script-intake.ts';
import { StaleStatusSweeper } from './stale-sweeper.ts';
import { StatusPublisher } from './status-publisher.ts';
import {
  ALL_GROUP,
  assertId,
  assertNamespace,
  type OfflineState,
  type OnlineState,
  parseTopic,
  topics,
} from './topics.ts';

export interface DeviceBridgeOptions {
  /** mqtt://host:port | mqtts:// | ws:// ; may carry user:pass (never logged nor shown in health). */
  url: string;
  /** Override the URL's credentials. */
  username?: string;
  password?: string;
  /** Default 4 (MQTT 3.1.1); 5 also answers on the response topic with correlation data. */
  protocolVersion?: 4 | 5;
  ns: string;
  deviceId: string;
  /** Extra groups; group `all` is implicit. */
  groups: readonly string[];
  installation: 'cash-register' | 'cash-register+pos' | 'pos';
  version: string;
  queue: TaskQueue;
  registry: Registry;
  logger: Logger;
  maxScriptBytes: number;
  /** How many submissions' requestIds are remembered (contract: 1000). */
  requestIdMemory?: number;
  /** Default `regbridge_<ns>_<deviceId>` (stable, so the broker keeps the session). */
  clientId?: string;
  /** start() resolves after this long even if the broker is unreachable; retries go on. Default 5000. */
  startTimeoutMs?: number;
  /** Delay between reconnect attempts, default 1000 ms. */
  reconnectPeriodMs?: number;
  /** `startedAt` of the state message; default: when start() was called. */
  startedAt?: Date;
}

/** CONNACK refusals that retrying cannot fix: start() fails with them (3.1.1 codes 1, 2, 4, 5; MQTT 5 0x84-0x87, 0x8C). */
const FATAL_CONNACK_CODES = new Set([1, 2, 4, 5, 0x84, 0x85, 0x86, 0x87, 0x8c]);

type Phase = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'stopped';

const TASK_EVENTS = ['queued', 'started', 'finished', 'failed'] as const;

export class DeviceBridge {
  readonly bootId: string;
  private readonly options: DeviceBridgeOptions;
  private endpoint: BrokerEndpoint | undefined;
  private client: MqttClient | undefined;
  private phase: Phase = 'idle';
  private online = false;
  private everConnected = false;
  private lastError: string | undefined;
  private groups: string[] = [];
  private metrics: BridgeMetrics | undefined;
  private statuses: StatusPublisher | undefined;
  private intake: ScriptIntake | undefined;
  private sweeper: StaleStatusSweeper | undefined;
  private requestIds: RequestIdMemory | undefined;
  private startedAt: Date | undefined;
  private outLink: BridgeLink | undefined;
  /** start() resolves once the script subscriptions of the first connection are acknowledged. */
  private firstSubscribed: Promise<void> | undefined;
  /** Completion callbacks of replies in flight: how they are recognised in mqtt.js' outgoing map. */
  private readonly replyCallbacks = new WeakSet<object>();
  private startTimer: NodeJS.Timeout | undefined;
  private readonly onTransition = (task: Readonly<Task>): void => {
    if (task.requestId !== undefined)
      this.requestIds?.updateStatus(task.requestId, task.id, statusOf(task.state));
    this.statuses?.publish(task);
  };
  private readonly onEvicted = (task: Readonly<Task>): void => this.statuses?.evicted(task);

  constructor(options: DeviceBridgeOptions) {
    this.options = options;
    this.bootId = randomUUID();
  }

  /**
   * Connects. Resolves once connected the first time, or after `startTimeoutMs` with the broker
   * still unreachable (logged; mqtt.js keeps retrying in the background, the REST side works
   * meanwhile). Rejects, and gives up, on a bad URL or a CONNACK refusal retrying cannot fix
   * (bad credentials, not authorised, unsupported protocol version, client id rejected).
   */
  async start(): Promise<void> {
    if (this.phase !== 'idle') throw new Error('DeviceBridge.start() called twice');
    const o = this.options;
    assertNamespace(o.ns);
    assertId('device', o.deviceId);
    for (const group of o.groups) assertId('group', group);
    this.endpoint = parseBrokerUrl(o.url, { username: o.username, password: o.password });
    this.groups = [...new Set([ALL_GROUP, ...o.groups])];
    this.startedAt = o.startedAt ?? new Date();
    const logger = o.logger.child({ component: 'mqtt-bridge', deviceId: o.deviceId, bootId: this.bootId });
    this.metrics = bridgeMetrics(o.registry);
    this.requestIds = new RequestIdMemory(o.requestIdMemory ?? 1000);
    const link = this.link(logger);
    this.outLink = link;
    this.statuses = new StatusPublisher({
      ns: o.ns,
      deviceId: o.deviceId,
      bootId: this.bootId,
      link,
      logger,
    });
    this.intake = new ScriptIntake({
      deviceId: o.deviceId,
      queue: o.queue,
      requestIds: this.requestIds,
      statuses: this.statuses,
      link,
      logger,
      maxScriptBytes: o.maxScriptBytes,
      protocolVersion: o.protocolVersion ?? 4,
    });
    this.sweeper = new StaleStatusSweeper({
      ns: o.ns,
      deviceId: o.deviceId,
      queue: o.queue,
      link,
      logger,
      subscribe: (filter, done) =>
        this.client?.subscribe(filter, { qos: 1 }, (error, granted) => {
          const refused = granted?.some((g) => g.qos > 2);
          done(error ?? (refused ? new Error(`subscription to ${filter} refused`) : undefined));
        }),
      unsubscribe: (filter) => this.client?.unsubscribe(filter),
    });
    for (const event of TASK_EVENTS) o.queue.on(event, this.onTransition);
    o.queue.on('evicted', this.onEvicted);

    this.phase = 'connecting';
    const client = connect(this.endpoint.url, this.clientOptions());
    this.client = client;
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error): void => {
        clearTimeout(this.startTimer);
        this.startTimer = undefined;
        client.removeListener('connect', onFirstConnect);
        client.removeListener('error', onFirstError);
        if (error) reject(error);
        else resolve();
      };
      const onFirstConnect = (): void => {
        // wire()'s connect handler ran first and subscribed: ready means scripts can arrive.
        void (this.firstSubscribed ?? Promise.resolve()).then(() => settle());
      };
      const onFirstError = (error: Error): void => {
        if (!(error instanceof ErrorWithReasonCode) || !FATAL_CONNACK_CODES.has(error.code)) return;
        this.detach();
        this.phase = 'stopped';
        client.end(true);
        settle(new Error(`MQTT broker ${this.endpoint?.url} refused the connection: ${error.message}`));
      };
      this.startTimer = setTimeout(() => {
        logger.warn({ url: this.endpoint?.url }, 'MQTT broker not reachable yet; retrying in the background');
        settle();
      }, o.startTimeoutMs ?? 5000);
      this.wire(client, logger);
      client.on('connect', onFirstConnect);
      client.on('error', onFirstError);
    });
  }

  /**
   * Publishes the offline state (retained) and disconnects cleanly (DISCONNECT, so the broker
   * drops the will), waiting briefly for in-flight QoS 1 messages. Removes the queue listeners and
   * clears every timer. Stop the queue first, so the aborted task's final status goes out too.
   */
  async stop(): Promise<void> {
    if (this.phase === 'stopped' || this.phase === 'idle') {
      this.phase = 'stopped';
      return;
    }
    this.phase = 'stopped';
    this.detach();
    this.sweeper?.end();
    const client = this.client;
    if (!client) return;
    if (this.online) {
      const offline: OfflineState = { online: false, deviceId: this.options.deviceId, bootId: this.bootId };
      await withTimeout(
        client.publishAsync(topics.state(this.options.ns, this.options.deviceId), JSON.stringify(offline), {
          qos: 1,
          retain: true,
        }),
        2000,
      ).catch(() => undefined);
      this.metrics?.messagesOut.inc({ kind: 'state' });
    }
    this.online = false;
    // Not forced: waits for unacknowledged QoS 1 messages, then sends DISCONNECT.
    const ended = await withTimeout(client.endAsync(false), 3000).then(
      () => true,
      () => false,
    );
    if (!ended) await client.endAsync(true).catch(() => undefined);
    client.removeAllListeners();
    client.on('error', () => undefined);
  }

  health(): MqttHealth {
    const state: MqttHealth['state'] =
      this.phase === 'connected' || this.phase === 'connecting' || this.phase === 'reconnecting'
        ? this.phase
        : 'offline';
    const health: MqttHealth = { state };
    if (this.endpoint) health.url = this.endpoint.url;
    const inFlight = this.client ? Object.keys(this.client.outgoing).length : 0;
    health.pending = (this.statuses?.pending ?? 0) + inFlight;
    return health;
  }

  /**
   * Test hook: drops the TCP connection without DISCONNECT, as a crash or cable pull would; the
   * broker then publishes the last will, and mqtt.js reconnects.
   */
  simulateConnectionLoss(): void {
    this.client?.stream.destroy();
  }

  private clientOptions(): IClientOptions {
    const o = this.options;
    const offline: OfflineState = { online: false, deviceId: o.deviceId, bootId: this.bootId };
    const protocolVersion = o.protocolVersion ?? 4;
    return {
      clientId: o.clientId ?? `regbridge_${o.ns.replace(/[^A-Za-z0-9_-]/g, '_')}_${o.deviceId}`,
      protocolVersion,
      // A persistent session: scripts published while the device is offline wait at the broker
      // (QoS 1), and notAfter keeps stale ones from running (contract section 3).
      clean: false,
      ...(protocolVersion === 5 && { properties: { sessionExpiryInterval: 7 * 24 * 3600 } }),
      reconnectPeriod: o.reconnectPeriodMs ?? 1000,
      reconnectOnConnackError: true,
      connectTimeout: 10_000,
      keepalive: 30,
      // The bridge resubscribes itself when the broker has no session (subscribeScripts).
      resubscribe: false,
      will: {
        topic: topics.state(o.ns, o.deviceId),
        payload: Buffer.from(JSON.stringify(offline)),
        qos: 1,
        retain: true,
      },
      ...(this.endpoint?.username !== undefined && { username: this.endpoint.username }),
      ...(this.endpoint?.password !== undefined && { password: this.endpoint.password }),
    };
  }

  private link(logger: Logger): BridgeLink {
    const bridge = this;
    const protocolVersion = this.options.protocolVersion ?? 4;
    return {
      get online() {
        return bridge.online;
      },
      publish(topic: string, payload: string | Buffer, options: PublishOptions, kind: OutKind): void {
        const client = bridge.client;
        if (!client) return;
        // A reply is only worth sending now (see dropUnackedReplies); the requester retries.
        if (kind === 'reply' && !bridge.online) {
          logger.warn({ topic }, 'reply dropped: not connected');
          return;
        }
        const properties = protocolVersion === 5 ? options.properties : undefined;
        const done = (error?: Error): void => {
          if (error && bridge.phase !== 'stopped') logger.warn({ topic, kind, err: error.message }, 'MQTT publish failed');
        };
        if (kind === 'reply') bridge.replyCallbacks.add(done);
        client.publish(topic, payload, { qos: 1, retain: options.retain, ...(properties && { properties }) }, done);
        bridge.metrics?.messagesOut.inc({ kind });
      },
    };
  }

  /**
   * Replies not acknowledged when a connection drops are forgotten instead of being resent on the
   * next one. A broker that refuses a publish may close the connection (aedes and the store
   * broker's ACL do for a replyTo outside what the device may publish to, 3.1.1 having no other
   * way to say no); resending that reply at every reconnect would cut the device off for good.
   * A reply is an answer to one request: the requester repeats it with the same requestId and
   * gets the answer again (idempotency, contract section 3). Statuses and state are kept.
   */
  private dropUnackedReplies(client: MqttClient, logger: Logger): void {
    for (const [key, entry] of Object.entries(client.outgoing)) {
      if (!this.replyCallbacks.has(entry.cb)) continue;
      const messageId = Number(key);
      delete client.outgoing[messageId];
      client.outgoingStore.del({ messageId }, () => undefined);
      client.messageIdProvider.deallocate(messageId);
      logger.warn({ messageId }, 'unacknowledged reply dropped with the connection');
    }
  }

  private wire(client: MqttClient, logger: Logger): void {
    client.on('connect', (connack) => this.onConnect(client, logger, connack.sessionPresent));
    client.on('close', () => {
      if (this.online) logger.warn({ url: this.endpoint?.url }, 'MQTT connection lost; reconnecting');
      this.online = false;
      this.dropUnackedReplies(client, logger);
      if (this.phase === 'connected') this.phase = 'reconnecting';
    });
    client.on('reconnect', () => {
      if (this.phase !== 'stopped' && this.everConnected) this.phase = 'reconnecting';
    });
    client.on('error', (error: Error & { code?: string | number }) => {
      // Repeats of the same error while the broker is away go to debug, not a line a second.
      const message = error.message;
      const level = message === this.lastError ? 'debug' : 'warn';
      this.lastError = message;
      logger[level]({ url: this.endpoint?.url, err: message, code: error.code }, 'MQTT error');
    });
    client.on('message', (topic, payload, packet) => this.onMessage(client, logger, topic, payload, packet));
  }

  private onConnect(client: MqttClient, logger: Logger, sessionPresent: boolean | undefined): void {
    if (this.phase === 'stopped') return;
    const first = !this.everConnected;
    this.everConnected = true;
    this.online = true;
    this.phase = 'connected';
    this.lastError = undefined;
    logger.info({ url: this.endpoint?.url, sessionPresent, reconnect: !first }, 'MQTT connected');
    const o = this.options;
    const state: OnlineState = {
      online: true,
      deviceId: o.deviceId,
      bootId: this.bootId,
      installation: o.installation,
      version: o.version,
      startedAt: (this.startedAt ?? new Date()).toISOString(),
      groups: this.groups,
    };
    this.outLink?.publish(topics.state(o.ns, o.deviceId), JSON.stringify(state), { retain: true }, 'state');
    // A resumed session keeps the subscriptions ([MQTT-3.1.2-4]); a new one needs them again.
    if (first || !sessionPresent) {
      const subscribed = this.subscribeScripts(client, logger);
      if (first) this.firstSubscribed = subscribed;
    }
    if (first) this.sweeper?.begin();
    // Contract section 3: after a reconnect, republish the status of every task held.
    this.statuses?.flush(o.queue.list());
  }

  /**
   * One SUBSCRIBE per filter: aedes-persistence-redis 12 never acknowledges a SUBSCRIBE carrying
   * several filters from a persistent session, and a refusal then names its filter.
   */
  private subscribeScripts(client: MqttClient, logger: Logger): Promise<void> {
    const o = this.options;
    const filters = [topics.deviceScripts(o.ns, o.deviceId), ...this.groups.map((g) => topics.groupScripts(o.ns, g))];
    const acks = filters.map(
      (filter) =>
        new Promise<void>((resolve) => {
          client.subscribe(filter, { qos: 1 }, (error, granted) => {
            if (error) logger.error({ filter, err: error.message }, 'subscribing to a script topic failed');
            else if (granted?.some((g) => g.qos > 2)) logger.error({ filter }, 'broker refused a script subscription');
            resolve();
          });
        }),
    );
    return Promise.all(acks).then(() => undefined);
  }

  private onMessage(
    client: MqttClient,
    logger: Logger,
    topic: string,
    payload: Buffer,
    packet: IPublishPacket,
  ): void {
    if (this.phase === 'stopped') return;
    const o = this.options;
    const parsed = parseTopic(o.ns, topic);
    const metrics = this.metrics;
    if (parsed?.kind === 'taskStatus' && parsed.deviceId === o.deviceId) {
      this.sweeper?.handle(parsed.taskId, payload, packet);
      return;
    }
    const ours =
      (parsed?.kind === 'deviceScripts' && parsed.deviceId === o.deviceId) ||
      (parsed?.kind === 'groupScripts' && this.groups.includes(parsed.group));
    if (!ours) {
      // A subscription left in the persistent session by an earlier configuration (other groups).
      metrics?.messagesIn.inc({ kind: 'other', result: 'ignored' });
      logger.info({ topic }, 'message on a topic this device no longer uses; unsubscribing');
      if (parsed?.kind === 'groupScripts') client.unsubscribe(topic);
      return;
    }
    const result = this.intake?.handle(topic, payload, packet) ?? 'refused';
    metrics?.messagesIn.inc({ kind: 'script', result });
  }

  private detach(): void {
    clearTimeout(this.startTimer);
    this.startTimer = undefined;
    const queue = this.options.queue;
    for (const event of TASK_EVENTS) queue.off(event, this.onTransition);
    queue.off('evicted', this.onEvicted);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
