/**
 * The store controller, the other end of docs/mqtt.md: learns devices from retained states, sends
 * one script to many (per group or per device) and follows each task through replies and statuses
 * until a result or the deadline. Submissions in flight are tracked in submissions.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { MqttClient } from 'mqtt';
import { parseBrokerUrls } from '../bridge/contract/broker-url.ts';
import type { BrokerRotation } from '../bridge/contract/failover.ts';
import { logClientErrors } from '../bridge/contract/mqtt-log.ts';
import type { ReconnectBackoff } from '../bridge/contract/reconnect-backoff.ts';
import { SubscribeRetry } from '../bridge/contract/subscribe-retry.ts';
import { createLogger, type Logger } from '../src/logger.ts';
import {
  connectFirst,
  controllerBackoff,
  controllerClientOptions,
  endClient,
  QuietWait,
  subscriptionRefusal,
  uncorkAll,
} from './broker-connection.ts';
import { DeviceDirectory, type TaskSummary } from './directory.ts';
import { Fanout } from './fanout.ts';
import { decodeControllerMessage } from './messages.ts';
import { RetainedRecheck } from './recheck.ts';
import { Submissions } from './submissions.ts';
import { planTargets } from './targets.ts';
import type {
  ConnectionState,
  ControllerEvents,
  DeviceEntry,
  FanoutResult,
  StoreControllerOptions,
  SubmitOptions,
  TaskView,
} from './types.ts';

export type { StoreControllerOptions } from './types.ts';

export type DroppedReply = 'forged' | 'not_sent' | 'unknown_request';

import {
  isMultiStore,
  storeLinkTopicSchema,
  storeNamespaceProblem,
  storeOfTopic,
} from '../bridge/contract/store-namespace.ts';
import { ID_PATTERN, type ScriptSubmission, topics } from '../bridge/contract/topics.ts';
import { disableMqttPacketNumberCache } from '../src/mqtt-packet-cache.ts';
import { topicPartsOf } from './store-keys.ts';
import { type StoreLink, StoreLinks } from './store-links.ts';
import { CONTROLLER_DEFAULTS, CONTROLLER_SUBSCRIBE_QOS } from './types.ts';

export class StoreController extends EventEmitter<ControllerEvents> {
  readonly ns: string;
  readonly clientId: string;
  private readonly options: StoreControllerOptions;
  private readonly logger: Logger;
  private readonly directory = new DeviceDirectory();
  private client: MqttClient | undefined;
  private rotation: BrokerRotation | undefined;
  private backoff: ReconnectBackoff | undefined;
  /** Refused or failed SUBSCRIBEs are sent again with backoff (bridge/contract/subscribe-retry.ts). */
  private subscriptions: SubscribeRetry | undefined;
  /** Counts connections: a resubscription belongs to the connection it started on. */
  private connections = 0;
  private state: ConnectionState = 'stopped';
  private lastMessageAt = 0;
  private readonly quiet = new QuietWait();
  /** The settle after a reconnect, before open results are asked again. */
  private readonly resendQuiet = new QuietWait();
  private readonly recheck: RetainedRecheck;
  private readonly submissions: Submissions;
  /** `storeLinkTopic`, with several stores only. */
  private readonly linkTopic: string | undefined;
  private readonly links = new StoreLinks();

  constructor(options: StoreControllerOptions) {
    disableMqttPacketNumberCache(); // 6 MiB of packet-id buffers (src/mqtt-packet-cache.ts)
    super();
    this.options = options;
    this.ns = options.ns;
    this.clientId = options.clientId ?? `regbridge-ctl-${randomBytes(4).toString('hex')}`;
    this.logger = (options.logger ?? createLogger({ level: 'silent' })).child({ component: 'controller' });
    this.recheck = new RetainedRecheck(options.ns, this.logger);
    this.linkTopic = isMultiStore(options.ns) ? options.storeLinkTopic : undefined;
    this.submissions = new Submissions({
      ns: options.ns,
      logger: this.logger,
      directory: this.directory,
      recheck: this.recheck,
      client: () => this.client,
      onResult: (requestId, result) => this.emit('result', requestId, result),
      recheckLeadMs: options.recheckLeadMs,
    });
  }

  get connection(): ConnectionState {
    return this.state;
  }

  /**
   * While disconnected after a first connection: the reconnect attempt awaited (1, 2, ...) and the
   * milliseconds until it starts (0: under way); undefined while connected (the service's /health).
   */
  get reconnect(): { attempt: number; inMs: number } | undefined {
    return this.backoff?.nextAttempt;
  }

  /**
   * Replies this controller dropped (contract 3.1), by reason: `forged`, `not_sent` (not sent to
   * that register), `unknown_request` (no submission of this controller in flight has its requestId).
   */
  readonly droppedReplies: Record<DroppedReply, number> = { forged: 0, not_sent: 0, unknown_request: 0 };

  /**
   * Connects, subscribes, and resolves once retained states and statuses stop arriving (`settleMs`,
   * at most `maxSettleMs`), so devices() is populated. Rejects when the first connection fails or a
   * subscription is still refused after the connect time-out (docs/controller.md).
   */
  async start(): Promise<void> {
    if (this.client) throw new Error('controller already started');
    const nsProblem = storeNamespaceProblem(this.ns);
    if (nsProblem) throw new Error(`invalid namespace ${JSON.stringify(this.ns)}: ${nsProblem}`);
    if (this.linkTopic !== undefined) {
      const checked = storeLinkTopicSchema.safeParse(this.linkTopic);
      if (!checked.success)
        throw new Error(
          `invalid storeLinkTopic ${JSON.stringify(this.linkTopic)}: ${checked.error.issues[0]?.message}`,
        );
    }
    if (!ID_PATTERN.test(this.clientId)) throw new Error('clientId must match [A-Za-z0-9_-]{1,64}');
    const endpoints = parseBrokerUrls(this.options.url, {
      ...(this.options.username !== undefined && { username: this.options.username }),
      ...(this.options.password !== undefined && { password: this.options.password }),
    });
    // Built before connecting, so a cap it refuses fails start() before any connection. Used only
    // after the first success: later losses are retried (a controller outlives broker restarts),
    // each attempt on the next broker of the list; waits grow on consecutive failures, randomised.
    const backoff = controllerBackoff(this.options.reconnectMaxMs, this.logger, endpoints.length);
    // The first connection tries every broker of the list once, in order (see connectFirst).
    const connectTimeoutMs = this.options.connectTimeoutMs ?? CONTROLLER_DEFAULTS.connectTimeoutMs;
    const { client, rotation } = await connectFirst(
      endpoints,
      controllerClientOptions(this.clientId, connectTimeoutMs, this.options.ca),
    );
    this.client = client;
    this.rotation = rotation;
    // It subscribes again after each reconnect (the 'connect' listener below).
    this.backoff = backoff;
    backoff.attach(client);
    rotation.attach(client);
    this.subscriptions = new SubscribeRetry(client, this.logger);
    this.connections = 1;
    this.setState('connected');
    client.on('message', (topic, payload) => this.onMessage(topic, payload));
    const resetErrorLog = logClientErrors(client, this.logger, () => rotation.current.url);
    client.on('connect', () => {
      resetErrorLog();
      this.connections += 1;
      this.setState('connected');
      const connection = this.connections;
      const current = (): boolean =>
        this.client === client && this.connections === connection && client.connected;
      // Subscribed first, so the answers reach this connection; the retained states read first,
      // so a register that restarted meanwhile (another bootId) is not sent the script again.
      void this.subscribeAll(client)
        .then(() =>
          this.resendQuiet.wait(
            () => this.lastMessageAt,
            this.options.settleMs ?? CONTROLLER_DEFAULTS.settleMs,
            this.options.maxSettleMs ?? CONTROLLER_DEFAULTS.maxSettleMs,
          ),
        )
        .then(() => {
          if (current()) this.emit('reasked', this.submissions.resendOpen(client));
        });
    });
    client.on('reconnect', () => this.setState('reconnecting'));
    client.on('offline', () => this.setState('offline'));
    this.lastMessageAt = Date.now();
    const refused = await this.subscribeAll(client, connectTimeoutMs);
    if (refused.length > 0) {
      await this.stop();
      throw new Error(subscriptionRefusal(rotation.current.url, refused, this.ns, this.options.username));
    }
    // Retained messages follow the SUBACK: wait until they stop coming (see StoreControllerOptions).
    await this.quiet.wait(
      () => this.lastMessageAt,
      this.options.settleMs ?? CONTROLLER_DEFAULTS.settleMs,
      this.options.maxSettleMs ?? CONTROLLER_DEFAULTS.maxSettleMs,
    );
    this.logger.info(
      { url: rotation.current.url, urls: rotation.urls, devices: this.directory.list().length },
      'controller started',
    );
  }

  /**
   * Every state, status and reply topic, one SUBSCRIBE each, retried while refused: for `budgetMs`
   * at start(), while the connection lasts after a reconnect. Resolves with the filters not granted.
   */
  private subscribeAll(client: MqttClient, budgetMs?: number): Promise<string[]> {
    const retry = this.subscriptions;
    if (!retry) return Promise.resolve([]);
    const connection = this.connections;
    return retry.subscribe({
      filters: [
        topics.allStates(this.ns),
        topics.allTaskStatuses(this.ns),
        topics.allReplies(this.ns),
        ...(this.linkTopic !== undefined ? [`${this.ns}/${this.linkTopic}`] : []),
      ],
      qos: CONTROLLER_SUBSCRIBE_QOS,
      ...(budgetMs !== undefined && { budgetMs }),
      alive: () => this.client === client && this.connections === connection && client.connected,
    });
  }

  /** Pending submissions resolve NO_ANSWER (`controller stopped`); then disconnects. */
  async stop(): Promise<void> {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    this.rotation?.detach();
    this.backoff?.detach();
    this.subscriptions?.cancel();
    this.quiet.cancel();
    this.resendQuiet.cancel();
    this.submissions.expireAll('controller stopped');
    this.recheck.clear();
    await endClient(client);
    this.setState('stopped');
  }

  /** Every known device, online and offline, sorted by id. */
  devices(): DeviceEntry[] {
    return this.directory.list();
  }

  device(deviceId: string): DeviceEntry | undefined {
    return this.directory.device(deviceId);
  }

  /** A device's tasks as far as status messages tell, newest first. */
  tasks(deviceId: string): TaskView[] {
    return this.directory.tasksOf(deviceId);
  }

  /** A device's newest known task and its queue: what a device list shows (tasks() copies and sorts). */
  taskSummary(deviceId: string): TaskSummary {
    return this.directory.taskSummaryOf(deviceId);
  }

  queue(deviceId: string): { queued: number; running: number } {
    return this.directory.queueOf(deviceId);
  }

  /**
   * Sends `script` once per group or once per listed device (targets.ts) and resolves with one
   * result per targeted device, in target order.
   */
  async submit(script: string, options: SubmitOptions): Promise<FanoutResult[]> {
    const client = this.client;
    if (!client) throw new Error('controller not started');
    if (typeof script !== 'string' || script.length === 0)
      throw new Error('script must be a non-empty string');
    if (!Number.isFinite(options.deadlineMs) || options.deadlineMs <= 0)
      throw new Error('deadlineMs must be > 0');
    const requestId = options.requestId ?? randomUUID();
    if (!/^[^/+#]{1,200}$/.test(requestId)) throw new Error('requestId: 1-200 characters, no / + #');
    if (this.submissions.has(requestId)) throw new Error(`requestId ${requestId} is already in flight`);

    const plan = planTargets(this.directory, options.to);
    const fanout = new Fanout(requestId, Date.now(), plan.online, plan.offline);
    // No replyTo (contract 3.1): replies come on the register's own topic, and no client id of
    // this controller ever reaches a register (contract 6.1).
    const submission: ScriptSubmission = { script, requestId };
    if (options.notAfter !== undefined) submission.notAfter = options.notAfter;
    return this.submissions.run(client, fanout, plan, submission, options);
  }

  /**
   * Puts what mqtt.js has written so far on the wire now: mqtt-packet corks the socket until
   * process.nextTick, which would hold a job's scripts until the end of the turn.
   */
  flushWrites(): void {
    if (this.client) uncorkAll(this.client);
  }

  /**
   * Ends the wait for submission `requestId` now (a job's attempt time-out): its devices still
   * missing are NO_ANSWER with `reason`, as at its deadline. Unknown ids are ignored.
   */
  expire(requestId: string, reason: string): void {
    this.submissions.expireOne(requestId, reason);
  }

  /**
   * Asks a device to cancel the queued task of `requestId` (docs/mqtt.md; a running task is never
   * cut). Its answer never ends a result (fanout.ts). Fire and forget: a failed publish is logged.
   */
  cancel(deviceId: string, requestId: string): void {
    const client = this.client;
    if (!client) throw new Error('controller not started');
    const parts = topicPartsOf(this.ns, deviceId);
    const topic = topics.deviceCancel(parts.ns, parts.deviceId);
    client.publishAsync(topic, JSON.stringify({ requestId }), { qos: 1 }).catch((error: Error) => {
      this.logger.warn({ topic, requestId, err: error.message }, 'cancel publish failed');
    });
  }

  /** Each store's link state, as `storeLinkTopic` told (several stores only). */
  storeLinks(): ReadonlyMap<string, StoreLink> {
    return this.links.all();
  }

  /** A message on a store's link topic: true when it was one (taken or not). */
  private onLink(topic: string, payload: Buffer): boolean {
    if (this.linkTopic === undefined || !topic.endsWith(`/${this.linkTopic}`)) return false;
    const at = storeOfTopic(this.ns, topic);
    if (!at || topic !== `${at.ns}/${this.linkTopic}`) return false;
    if (this.links.apply(at.store, payload, new Date()))
      this.logger.info(
        { store: at.store, link: this.links.all().get(at.store)?.up ?? 'unknown' },
        'store link',
      );
    return true;
  }

  private onMessage(topic: string, payload: Buffer): void {
    if (this.onLink(topic, payload)) return;
    const decoded = decodeControllerMessage(this.ns, topic, payload);
    if (!decoded) return;
    const now = new Date();
    switch (decoded.kind) {
      case 'invalid':
        this.logger.warn({ topic, err: decoded.error }, 'invalid message ignored');
        return;
      case 'badReply':
        this.dropReply('forged', topic, decoded.error);
        return;
      case 'reply': {
        const taken = this.submissions.reply(
          { ...decoded.reply, requestId: decoded.requestId },
          now.getTime(),
        );
        if (taken === 'notSent')
          this.dropReply('not_sent', topic, 'the submission was not sent to this register');
        else if (taken === 'unknownRequest') this.dropReply('unknown_request', topic);
        return;
      }
      case 'state': {
        this.lastMessageAt = now.getTime();
        if (decoded.dropped !== undefined)
          this.logger.warn({ topic, err: decoded.dropped }, 'state taken without its attributes');
        const change = this.directory.applyState(decoded.deviceId, decoded.state, now);
        if (change.kind === 'removed') this.emit('deviceRemoved', change.deviceId);
        if (change.kind !== 'changed') return;
        this.emit('device', change.entry);
        this.submissions.feed((fanout) => fanout.onState(change.entry, now.getTime()), {
          deviceId: change.entry.deviceId,
        });
        return;
      }
      case 'statusCleared':
        this.lastMessageAt = now.getTime();
        this.directory.clearStatus(decoded.deviceId, decoded.taskId);
        return;
      case 'status': {
        this.lastMessageAt = now.getTime();
        const view = this.directory.applyStatus(decoded.message, now);
        if (!view) {
          this.logger.debug({ topic, seq: decoded.message.seq }, 'stale status ignored');
          return;
        }
        this.emit('status', view);
        this.submissions.feed((fanout) => fanout.onStatus(view, now.getTime()), { deviceId: view.deviceId });
      }
    }
  }

  /** A reply no result may be decided by: counted, and logged unless it is merely not ours. */
  private dropReply(reason: DroppedReply, topic: string, error?: string): void {
    this.droppedReplies[reason] += 1;
    if (reason === 'unknown_request')
      this.logger.debug({ topic }, 'reply for no submission in flight ignored');
    else this.logger.warn({ topic, reason, err: error }, 'reply dropped');
  }

  private setState(state: ConnectionState): void {
    if (state === this.state) return;
    this.state = state;
    this.emit('connection', state);
  }
}
