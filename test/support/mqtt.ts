/**
 * Await-able MQTT test clients: a subscriber that records every message and lets a test wait for
 * the one it expects (checked against what already arrived, then against each new message, with
 * a time-out instead of a sleep).
 */
import { randomUUID } from 'node:crypto';
import { connectAsync, type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import type { Credentials } from './brokers.ts';

export interface Received {
  topic: string;
  payload: Buffer;
  retain: boolean;
  packet: IPublishPacket;
  /** The payload as JSON; undefined for an empty or non-JSON payload. */
  json: unknown;
}

type Predicate = (message: Received) => boolean;

interface Waiter {
  predicate: Predicate;
  resolve: (message: Received) => void;
  timer?: NodeJS.Timeout;
}

export interface SubscriberOptions extends Credentials {
  protocolVersion?: 4 | 5;
  clientId?: string;
}

function parseJson(payload: Buffer): unknown {
  if (payload.length === 0) return undefined;
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
}

export class TestClient {
  readonly client: MqttClient;
  readonly messages: Received[] = [];
  private readonly waiters = new Set<Waiter>();

  private constructor(client: MqttClient) {
    this.client = client;
    client.on('message', (topic, payload, packet) => {
      const message: Received = { topic, payload, retain: packet.retain, packet, json: parseJson(payload) };
      this.messages.push(message);
      for (const waiter of [...this.waiters]) {
        if (waiter.predicate(message)) {
          this.waiters.delete(waiter);
          waiter.resolve(message);
        }
      }
    });
  }

  /** A clean-session client (mqtt.js resubscribes after reconnects), subscribed to `filters` at QoS 1. */
  static async connect(url: string, filters: string[], options: SubscriberOptions = {}): Promise<TestClient> {
    // A fresh options object per client: mqtt.js keeps and mutates the one it is given.
    const clientOptions: IClientOptions = {
      clientId: options.clientId ?? `test-${randomUUID()}`,
      protocolVersion: options.protocolVersion ?? 4,
      clean: true,
      reconnectPeriod: 200,
      connectTimeout: 10_000,
      ...(options.username !== undefined && { username: options.username }),
      ...(options.password !== undefined && { password: options.password }),
    };
    const client = await connectAsync(url, clientOptions);
    client.on('error', () => undefined);
    const test = new TestClient(client);
    if (filters.length > 0) await test.subscribe(filters);
    return test;
  }

  async subscribe(filters: string[]): Promise<void> {
    const granted = await this.client.subscribeAsync(filters, { qos: 1 });
    const refused = granted.filter((g) => g.qos > 2);
    if (refused.length > 0)
      throw new Error(`subscription refused: ${refused.map((g) => g.topic).join(', ')}`);
  }

  /** The first message (already received or yet to come) that satisfies `predicate`. */
  waitFor(predicate: Predicate, what: string, timeoutMs = 10_000): Promise<Received> {
    const found = this.messages.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        const seen = this.messages.map(
          (m) => `${m.topic} ${m.retain ? '(retained) ' : ''}${m.payload.toString()}`,
        );
        reject(
          new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received:\n${seen.join('\n')}`),
        );
      }, timeoutMs);
      waiter.timer = timer;
      this.waiters.add(waiter);
    });
  }

  /** Waits until `count` received messages satisfy `predicate`; returns them. */
  async waitForCount(
    predicate: Predicate,
    count: number,
    what: string,
    timeoutMs = 10_000,
  ): Promise<Received[]> {
    let seen = 0;
    await this.waitFor(
      () => {
        seen = this.messages.filter(predicate).length;
        return seen >= count;
      },
      `${count} x ${what}`,
      timeoutMs,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n(${seen} matched)`);
    });
    return this.messages.filter(predicate);
  }

  /**
   * A round trip through the broker on `topic` (which this client must be subscribed to): once
   * it returns, what the broker had queued for this client before it (retained messages of
   * earlier subscriptions included, on the brokers tested) has arrived.
   */
  async barrier(topic: string): Promise<void> {
    const marker = randomUUID();
    const arrived = this.waitFor(
      (m) => m.topic === topic && m.payload.toString() === marker,
      `barrier ${topic}`,
    );
    await this.client.publishAsync(topic, marker, { qos: 1 });
    await arrived;
  }

  publish(
    topic: string,
    payload: string | Buffer,
    options: { retain?: boolean; properties?: IPublishPacket['properties'] } = {},
  ) {
    return this.client.publishAsync(topic, payload, { qos: 1, retain: options.retain ?? false, ...options });
  }

  async close(): Promise<void> {
    for (const waiter of this.waiters) clearTimeout(waiter.timer);
    this.waiters.clear();
    await this.client.endAsync(true);
  }
}

export function jsonOf<T = Record<string, unknown>>(message: Received): T {
  return message.json as T;
}
