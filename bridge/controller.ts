/**
 * The store controller: the other end of the MQTT topic contract (contract section 3). It learns
 * the store's devices from their retained states, sends one script to many devices (one publish
 * per group, or one per device) and follows every targeted device's task through replies and
 * status messages until each has a result or the deadline passes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { MqttClient } from 'mqtt';
import { createLogger, type Logger } from '../src/logger.ts';
import { parseBrokerUrls } from './broker-url.ts';
import { connectFirst, QuietWait } from './controller-connection.ts';
import { DeviceDirectory } from './controller-directory.ts';
import { Fanout } from './controller-fanout.ts';
import { decodeControllerMessage, replyPrefix } from './controller-messages.ts';
import { RetainedRecheck } from './controller-recheck.ts';
import { planTargets } from './controller-targets.ts';
import type {
  ConnectionState,
  ControllerEvents,
  DeviceEntry,
  FanoutResult,
  StoreControllerOptions,
  SubmitOptions,
  TaskView,
} from './controller-types.ts';
import type { BrokerRotation } from './failover.ts';

export type { StoreControllerOptions } from './controller-types.ts';

import { assertNamespace, ID_PATTERN, type ScriptSubmission, topics } from './topics.ts';

/** Default lead of the retained-status recheck before a deadline (controller-recheck.ts). */
const RECHECK_LEAD_MS = 2000;

interface Active {
  fanout: Fanout;
  timer: NodeJS.Timeout;
  recheckTimer?: NodeJS.Timeout;
  /** Status filters subscribed afresh for this submission's missing devices. */
  rechecked: string[];
  onResult: SubmitOptions['onResult'];
  resolve: (results: FanoutResult[]) => void;
}

export class StoreController extends EventEmitter<ControllerEvents> {
  readonly ns: string;
  readonly clientId: string;
  private readonly options: StoreControllerOptions;
  private readonly logger: Logger;
  private readonly directory = new DeviceDirectory();
  private readonly active = new Map<string, Active>();
  private client: MqttClient | undefined;
  private rotation: BrokerRotation | undefined;
  private state: ConnectionState = 'stopped';
  private lastMessageAt = 0;
  private readonly quiet = new QuietWait();
  private readonly recheck: RetainedRecheck;

  constructor(options: StoreControllerOptions) {
    super();
    this.options = options;
    this.ns = options.ns;
    this.clientId = options.clientId ?? `regbridge-ctl-${randomBytes(4).toString('hex')}`;
    this.logger = (options.logger ?? createLogger({ level: 'silent' })).child({ component: 'controller' });
    this.recheck = new RetainedRecheck(options.ns, this.logger);
  }

  get connection(): ConnectionState {
    return this.state;
  }

  /** Replies come to `<ns>/replies/<clientId>/<requestId>` (the broker lets devices publish under `<ns>/replies/#`). */
  replyTopic(requestId: string): string {
    return `${replyPrefix(this.ns, this.clientId)}${requestId}`;
  }

  /**
   * Connects, subscribes to every state, status and own reply topic, then waits for the retained
   * states and statuses to arrive: it resolves once none came for `settleMs` (or `maxSettleMs`
   * passed), so devices() is populated when start() returns. Rejects when the first connection
   * fails (refused, bad credentials, time-out) or a subscription is not granted.
   */
  async start(): Promise<void> {
    if (this.client) throw new Error('controller already started');
    assertNamespace(this.ns);
    if (!ID_PATTERN.test(this.clientId)) throw new Error('clientId must match [A-Za-z0-9_-]{1,64}');
    const endpoints = parseBrokerUrls(this.options.url, {
      ...(this.options.username !== undefined && { username: this.options.username }),
      ...(this.options.password !== undefined && { password: this.options.password }),
    });
    // The first connection tries every broker of the list once, in order (see connectFirst).
    const { client, rotation } = await connectFirst(endpoints, {
      clientId: this.clientId,
      protocolVersion: 4,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: this.options.connectTimeoutMs ?? 10_000,
    });
    this.client = client;
    this.rotation = rotation;
    // Only after the first success: later losses are retried (a controller outlives broker
    // restarts), each attempt on the next broker of the list; mqtt.js resubscribes after them.
    client.options.reconnectPeriod = 1000;
    rotation.attach(client);
    this.setState('connected');
    client.on('message', (topic, payload) => this.onMessage(topic, payload));
    client.on('connect', () => this.setState('connected'));
    client.on('reconnect', () => this.setState('reconnecting'));
    client.on('offline', () => this.setState('offline'));
    client.on('error', (error) => this.logger.warn({ err: error.message }, 'mqtt error'));
    this.lastMessageAt = Date.now();
    let refused: string[];
    try {
      const granted = await client.subscribeAsync(
        [
          topics.allStates(this.ns),
          topics.allTaskStatuses(this.ns),
          `${replyPrefix(this.ns, this.clientId)}+`,
        ],
        { qos: 1 },
      );
      refused = granted.filter((g) => g.qos === 128).map((g) => g.topic);
    } catch (error) {
      await this.stop();
      throw new Error(`cannot subscribe on ${rotation.current.url}: ${(error as Error).message}`);
    }
    if (refused.length > 0) {
      await this.stop();
      throw new Error(`broker refused subscriptions: ${refused.join(', ')} (is the user a controller?)`);
    }
    // Retained messages follow the SUBACK: wait until they stop coming (see StoreControllerOptions).
    await this.quiet.wait(
      () => this.lastMessageAt,
      this.options.settleMs ?? 250,
      this.options.maxSettleMs ?? 5000,
    );
    this.logger.info(
      { url: rotation.current.url, urls: rotation.urls, devices: this.directory.list().length },
      'controller started',
    );
  }

  /** Pending submissions resolve NO_ANSWER (`controller stopped`); then disconnects. */
  async stop(): Promise<void> {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    this.rotation?.detach();
    this.quiet.cancel();
    for (const active of [...this.active.values()]) {
      for (const result of active.fanout.expire('controller stopped')) this.report(active, result);
    }
    client.removeAllListeners('message');
    client.removeAllListeners('connect');
    client.removeAllListeners('reconnect');
    client.removeAllListeners('offline');
    // Keep an error listener while closing: an unhandled 'error' event would crash the process.
    client.removeAllListeners('error');
    client.on('error', () => {});
    this.recheck.clear();
    await client.endAsync();
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

  queue(deviceId: string): { queued: number; running: number } {
    return this.directory.queueOf(deviceId);
  }

  /**
   * Sends `script` once per group (`'all'`, `{group}`) or once per device (an id list) and
   * resolves with one result per targeted device, in target order. Targets of a group are the
   * devices known online with that group now; known offline ones are OFFLINE. Listed ids that are
   * unknown or offline are OFFLINE and get nothing.
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
    if (this.active.has(requestId)) throw new Error(`requestId ${requestId} is already in flight`);

    const plan = planTargets(this.directory.list(), options.to);
    const fanout = new Fanout(requestId, Date.now(), plan.online, plan.offline);
    return new Promise<FanoutResult[]>((resolve) => {
      const active: Active = {
        fanout,
        onResult: options.onResult,
        resolve,
        rechecked: [],
        timer: setTimeout(() => {
          for (const result of fanout.expire()) this.report(active, result);
        }, options.deadlineMs),
      };
      // Shortly before the deadline, look at the retained statuses of the devices still missing.
      const lead = Math.min(this.options.recheckLeadMs ?? RECHECK_LEAD_MS, options.deadlineMs / 2);
      if (lead > 0)
        active.recheckTimer = setTimeout(() => this.recheckMissing(active), options.deadlineMs - lead);
      this.active.set(requestId, active);
      this.callback(() => options.onSent?.({ requestId, sentTo: fanout.sentTo, offline: plan.offline }));
      for (const result of fanout.initialResults()) this.report(active, result);
      if (fanout.complete) return;
      const submission: ScriptSubmission = { script, requestId, replyTo: this.replyTopic(requestId) };
      if (options.notAfter !== undefined) submission.notAfter = options.notAfter;
      const payload = JSON.stringify(submission);
      const sends =
        plan.group !== undefined
          ? [{ topic: topics.groupScripts(this.ns, plan.group), deviceIds: fanout.sentTo }]
          : fanout.sentTo.map((id) => ({ topic: topics.deviceScripts(this.ns, id), deviceIds: [id] }));
      for (const { topic, deviceIds } of sends) {
        this.logger.debug({ topic, requestId, devices: deviceIds.length }, 'script sent');
        client.publishAsync(topic, payload, { qos: 1 }).catch((error: Error) => {
          this.logger.warn({ topic, requestId, err: error.message }, 'publish failed');
          for (const result of fanout.fail(deviceIds, `publish failed: ${error.message}`, Date.now())) {
            this.report(active, result);
          }
        });
      }
    });
  }

  private onMessage(topic: string, payload: Buffer): void {
    const decoded = decodeControllerMessage(this.ns, this.clientId, topic, payload);
    if (!decoded) return;
    const now = new Date();
    switch (decoded.kind) {
      case 'invalid':
        this.logger.warn({ topic, err: decoded.error }, 'invalid message ignored');
        return;
      case 'reply': {
        const active = this.active.get(decoded.requestId);
        if (active) this.feed((fanout) => fanout.onReply(decoded.reply, now.getTime()), [active]);
        return;
      }
      case 'state': {
        this.lastMessageAt = now.getTime();
        const change = this.directory.applyState(decoded.deviceId, decoded.state, now);
        if (change.kind === 'removed') this.emit('deviceRemoved', change.deviceId);
        if (change.kind !== 'changed') return;
        this.emit('device', change.entry);
        this.feed((fanout) => fanout.onState(change.entry, now.getTime()));
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
        this.feed((fanout) => fanout.onStatus(view, now.getTime()));
      }
    }
  }

  private feed(
    apply: (fanout: Fanout) => FanoutResult | undefined,
    targets = [...this.active.values()],
  ): void {
    for (const active of targets) {
      const result = apply(active.fanout);
      if (result) this.report(active, result);
    }
  }

  private report(active: Active, result: FanoutResult): void {
    const { fanout } = active;
    this.emit('result', fanout.requestId, result);
    this.callback(() => active.onResult?.(result, { done: fanout.done, total: fanout.total }));
    if (!fanout.complete || !this.active.has(fanout.requestId)) return;
    clearTimeout(active.timer);
    clearTimeout(active.recheckTimer);
    this.recheck.release(this.client, active.rechecked);
    this.active.delete(fanout.requestId);
    active.resolve(fanout.results());
  }

  /**
   * A status this controller missed (dropped by a broker, or known before the submission) ends
   * the wait too: first what the directory already knows, then the retained status topics of the
   * devices still missing, read again through a fresh subscription (controller-recheck.ts).
   */
  private recheckMissing(active: Active): void {
    const now = Date.now();
    for (const deviceId of active.fanout.pendingDeviceIds()) {
      for (const view of this.directory.tasksOf(deviceId)) {
        const result = active.fanout.onStatus(view, now);
        if (result) this.report(active, result);
      }
    }
    const missing = active.fanout.pendingDeviceIds();
    if (!this.client || missing.length === 0 || !this.active.has(active.fanout.requestId)) return;
    this.logger.info(
      { requestId: active.fanout.requestId, missing: missing.length },
      'rechecking retained statuses',
    );
    active.rechecked = this.recheck.request(this.client, missing);
  }

  /** A caller's callback must not break the controller's bookkeeping. */
  private callback(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'submit callback threw');
    }
  }

  private setState(state: ConnectionState): void {
    if (state === this.state) return;
    this.state = state;
    this.emit('connection', state);
  }
}
