/**
 * The brokers the MQTT 3.1.1 conformance suite runs against: the store broker and, as the
 * reference, a Mosquitto started by the test on a free port. Each gives the same users (Mosquitto
 * accepts any name: it has no users), and topics the store ACL lets through, so one test body
 * serves both; `store` says where the store broker differs on purpose (docs/broker.md,
 * "Conformance").
 */

import { randomUUID } from 'node:crypto';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { brokersByName } from './brokers.ts';
import { brokerLogger } from './loggers.ts';
import { type ConnectOptions, RawClient, type Received, subscribe, TYPE } from './raw-mqtt.ts';

export interface ConformanceTarget {
  name: string;
  /** The store broker: ACL, retained scripts refused, client ids owned by users. */
  store: boolean;
  port: number;
  ns: string;
  stop(): Promise<void>;
}

export const NS = 'conf';
export const DEVICE = 'dev1';

/** Users of the store broker; on Mosquitto the same names simply pass. */
export const USERS = {
  controller: { username: 'hq', password: 'hq-secret' },
  controller2: { username: 'hq2', password: 'hq2-secret' },
  device: { username: DEVICE, password: 'dev1-secret' },
} as const;

async function startStore(): Promise<ConformanceTarget> {
  const broker = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: NS,
    users: [
      { name: USERS.controller.username, password: USERS.controller.password, role: 'controller' },
      { name: USERS.controller2.username, password: USERS.controller2.password, role: 'controller' },
      { name: USERS.device.username, password: USERS.device.password, role: 'device' },
    ],
    logger: brokerLogger,
  });
  await broker.start();
  return { name: 'store broker', store: true, port: broker.port, ns: NS, stop: () => broker.stop() };
}

async function startMosquitto(): Promise<ConformanceTarget> {
  const running = await brokersByName.mosquitto.start(NS);
  const port = Number(new URL(running.url).port);
  return { name: 'mosquitto (reference)', store: false, port, ns: NS, stop: () => running.stop() };
}

export const conformanceTargets: { name: string; start(): Promise<ConformanceTarget> }[] = [
  { name: 'store broker', start: startStore },
  { name: 'mosquitto (reference)', start: startMosquitto },
];

/** A unique topic under `<ns>/replies/`, where controllers may publish and subscribe. */
export function replyTopic(label: string): string {
  return `${NS}/replies/${label}/${randomUUID().slice(0, 8)}`;
}

/** A unique retained status topic of the device user (it may publish it retained). */
export function statusTopic(): string {
  return `${NS}/devices/${DEVICE}/tasks/${Math.floor(Math.random() * 1e9)}/status`;
}

export function clientId(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/** Connected (CONNACK 0 checked) as `who`, with a fresh client id unless given. */
export async function open(
  target: ConformanceTarget,
  who: keyof typeof USERS,
  options: ConnectOptions = {},
): Promise<{ client: RawClient; connack: Received }> {
  const result = await RawClient.connected(target.port, {
    // The store broker lets a device user connect with its own client id only (contract 6.1).
    clientId: who === 'device' ? deviceClientId(NS, DEVICE) : clientId(who),
    ...USERS[who],
    ...options,
  });
  if (result.connack.returnCode !== 0) {
    result.client.socket.destroy();
    throw new Error(`CONNACK ${result.connack.returnCode} for ${who}`);
  }
  return result;
}

/** SUBSCRIBE and its SUBACK's return codes. */
export async function subscribed(
  client: RawClient,
  id: number,
  filters: [string, number][],
): Promise<number[]> {
  client.send(subscribe(id, filters));
  const suback = await client.next((p) => p.type === TYPE.SUBACK && p.id === id);
  return suback.codes ?? [];
}

/** Opens a raw connection, sends `bytes`, and reports whether the broker closed it and what it sent. */
export async function closesOn(target: ConformanceTarget, ...bytes: Buffer[]): Promise<Received[]> {
  const client = await RawClient.open(target.port);
  client.send(...bytes);
  await client.waitClosed();
  return client.packets;
}

/** Every client a test opened, closed at its end. */
export class Clients {
  readonly #clients: RawClient[] = [];

  add<T extends { client: RawClient }>(opened: T): T {
    this.#clients.push(opened.client);
    return opened;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.#clients.splice(0).map((client) => client.drop()));
  }
}
