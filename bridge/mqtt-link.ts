/**
 * The bridge's publishing side over one mqtt.js client: every message QoS 1; replies held until
 * the message they answer is acknowledged, and never resent on a later connection. Implements
 * BridgeLink for the status publisher, the script intake and the stale sweeper.
 */
import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { BridgeLink, OutKind, PublishOptions } from './bridge-link.ts';
import type { BridgeMetrics } from './bridge-metrics.ts';
import { assertMqttInternals, forgetReplies } from './mqtt-fixes/forget-replies.ts';

export interface MqttLinkOptions {
  logger: Logger;
  metrics: BridgeMetrics;
  /** The protocol of the connection in use (it may change at a reconnect: `--mqtt-protocol auto`). */
  protocolVersion: () => 4 | 5;
}

export class MqttLink implements BridgeLink {
  private readonly options: MqttLinkOptions;
  private client: MqttClient | undefined;
  private connected = false;
  private closed = false;
  /** Completion callbacks of replies: how they are recognised in mqtt.js' outgoing map. */
  private readonly replyCallbacks = new WeakSet<object>();
  /** Replies waiting for the next turn, behind the PUBACK of the message they answer. */
  private heldReplies: Array<() => void> = [];
  private replyTurn: NodeJS.Immediate | undefined;
  private readonly flushReplies = (): void => {
    if (this.replyTurn !== undefined) clearImmediate(this.replyTurn);
    this.replyTurn = undefined;
    const held = this.heldReplies;
    this.heldReplies = [];
    for (const send of held) send();
  };

  constructor(options: MqttLinkOptions) {
    this.options = options;
  }

  get online(): boolean {
    return this.connected && !this.closed;
  }

  /** QoS 1 messages handed to mqtt.js and not yet acknowledged by the broker. */
  get inFlight(): number {
    return this.client ? Object.keys(this.client.outgoing).length : 0;
  }

  attach(client: MqttClient): void {
    assertMqttInternals(client);
    this.client = client;
  }

  /** The bridge has handled CONNACK: publishing goes straight to the broker from now on. */
  markConnected(): void {
    this.connected = true;
  }

  publish(
    topic: string,
    payload: string | Buffer,
    options: PublishOptions,
    kind: OutKind,
    onDone?: (error?: Error) => void,
  ): void {
    const client = this.client;
    if (!client || this.closed) {
      onDone?.(new Error('not connected'));
      return;
    }
    const { logger, metrics, protocolVersion } = this.options;
    const properties = protocolVersion() === 5 ? options.properties : undefined;
    const done = this.completion(topic, kind, onDone);
    const send = (): void => {
      client.publish(
        topic,
        payload,
        { qos: 1, retain: options.retain, ...(properties && { properties }) },
        done,
      );
      metrics.countOut(kind);
    };
    if (kind !== 'reply') {
      send();
      return;
    }
    // Replies go out on the next turn, after mqtt.js has written the PUBACK of the script message
    // (it does so in the same turn as the 'message' event). A broker that refuses the reply by closing the
    // connection then cannot redeliver the script, and the reply is dropped with the connection
    // (connectionLost): no disconnect loop.
    this.replyCallbacks.add(done);
    this.heldReplies.push(() => {
      if (!this.online) {
        logger.warn({ topic }, 'reply dropped: not connected');
        return;
      }
      send();
    });
    this.replyTurn ??= setImmediate(this.flushReplies);
  }

  /**
   * The callback mqtt.js keeps with a QoS 1 message until its PUBACK, built apart from publish() so
   * it holds only these values, not that call's whole scope.
   */
  private completion(
    topic: string,
    kind: OutKind,
    onDone?: (error?: Error) => void,
  ): (error?: Error) => void {
    return (error) => {
      if (error && !this.closed)
        this.options.logger.warn({ topic, kind, err: error.message }, 'MQTT publish failed');
      onDone?.(error);
    };
  }

  /**
   * On every 'close': unacknowledged replies are forgotten, not resent, since a broker refusing a
   * publish may close the connection and a resend would cut the device off for good. The requester
   * repeats with the same requestId (docs/mqtt.md). Statuses and state are kept.
   */
  connectionLost(): void {
    this.connected = false;
    const client = this.client;
    if (!client) return;
    forgetReplies(
      client,
      (callback) => this.replyCallbacks.has(callback as object),
      (messageId) =>
        this.options.logger.warn({ messageId }, 'unacknowledged reply dropped with the connection'),
    );
  }

  /** stop(): nothing more is published; deferred replies are cancelled. */
  close(): void {
    this.closed = true;
    this.connected = false;
    if (this.replyTurn !== undefined) clearImmediate(this.replyTurn);
    this.replyTurn = undefined;
    this.heldReplies = [];
  }
}
