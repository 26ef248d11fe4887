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
   * The callback mqtt.js keeps with a QoS 1 message until its PUBACK. Built here, apart from
   * publish(), so it holds only these three values: a closure made inside publish() would keep
   * that call's whole scope (client, payload, options, the send function) alive as long, and at
   * thousands of messages a second all of it reached V8's old generation (docs/benchmarks.md,
   * "Heap under floods").
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
   * On every 'close'. Replies not acknowledged when a connection drops are forgotten instead of
   * being resent on the next one: a broker that refuses a publish may close the connection
   * (aedes, and the store broker's ACL for a replyTo outside what a device may publish to: 3.1.1
   * has no other way to say no), and resending that reply at every reconnect would cut the device
   * off for good. A reply answers one request; the requester repeats it with the same requestId
   * and is answered again (idempotency, docs/mqtt.md). Statuses and state are kept.
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
