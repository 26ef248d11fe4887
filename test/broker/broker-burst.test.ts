/**
 * Bursts through the store broker: a burst of publishes reaches every subscriber whole, each
 * topic's messages of one QoS in the order they were published ([MQTT-4.6.0-6]), at QoS 0 and at
 * QoS 1 (persistent session); a subscriber that goes away in the middle of a burst costs nobody
 * else a message; a large packet sent in pieces after a burst keeps its place; a DISCONNECT at
 * the end of a burst is handled before the connection closes. Raw sockets on a real store broker;
 * every wait is for a packet, with a time-out.
 */
import { describe, expect, it } from 'vitest';
import { brokerPerTest, HQ } from '../support/broker-per-test.ts';
import {
  ack,
  disconnect,
  pingreq,
  publish,
  RawClient,
  type Received,
  subscribe,
  TYPE,
} from '../support/raw-mqtt.ts';
import { until } from '../support/waits.ts';

const USER = HQ;
/** Enough packets that aedes handles them over several turns of its event loop. */
const BURST = 600;
const brokers = brokerPerTest();
const { opened } = brokers;

async function client(
  port: number,
  clientId: string,
  clean = true,
  will?: { topic: string; payload: string },
): Promise<RawClient> {
  const { client: c, connack } = await RawClient.connected(port, {
    clientId,
    clean,
    ...USER,
    ...(will && { will }),
  });
  opened.push(c);
  expect(connack.returnCode).toBe(0);
  return c;
}

async function subscriber(port: number, clientId: string, qos: number, clean = true): Promise<RawClient> {
  const sub = await client(port, clientId, clean);
  sub.send(subscribe(1, [['pos/replies/#', qos]]));
  expect((await sub.next(TYPE.SUBACK)).codes).toEqual([qos]);
  return sub;
}

/** BURST publishes over five topics, QoS 1 and 0 alternating, sent in one socket write. */
function burst(): { packets: Buffer; sent: { topic: string; qos: number; payload: string }[] } {
  const packets: Buffer[] = [];
  const sent: { topic: string; qos: number; payload: string }[] = [];
  for (let i = 1; i <= BURST; i += 1) {
    const payload = `m${i}:${'x'.repeat(i % 50)}`;
    sent.push({ topic: `pos/replies/hq/t${i % 5}`, qos: i % 2, payload });
    packets.push(publish({ topic: `pos/replies/hq/t${i % 5}`, payload, qos: i % 2 === 1 ? 1 : 0, id: i }));
  }
  return { packets: Buffer.concat(packets), sent };
}

/**
 * The payloads grouped by topic and published QoS, in arrival order. MQTT orders the messages of one
 * topic and QoS ([MQTT-4.6.0-6]); across QoS aedes does not keep the order (it publishes a QoS 1
 * message only once its PUBACK is written, a QoS 0 one at once).
 */
function byTopicAndQos(messages: { topic: string; qos: number; payload: string }[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const m of messages) {
    const key = `${m.topic} qos ${m.qos}`;
    groups.set(key, [...(groups.get(key) ?? []), m.payload]);
  }
  return groups;
}

async function deliveries(sub: RawClient, count: number, acknowledge: boolean): Promise<Received[]> {
  const got: Received[] = [];
  for (let i = 0; i < count; i += 1) {
    const delivered = await sub.next(TYPE.PUBLISH);
    if (acknowledge && delivered.qos === 1) sub.send(ack(TYPE.PUBACK, delivered.id ?? 0));
    got.push(delivered);
  }
  return got;
}

describe('bursts through the store broker', () => {
  it('a burst reaches a QoS 0 and a persistent QoS 1 subscriber whole and in order', async () => {
    const b = await brokers.start();
    const fast = await subscriber(b.port, 'qos0-sub', 0);
    const persistent = await subscriber(b.port, 'qos1-sub', 1, false);
    const pub = await client(b.port, 'pub');
    const { packets, sent } = burst();
    pub.send(packets);
    const [got0, got1] = await Promise.all([
      deliveries(fast, BURST, false),
      deliveries(persistent, BURST, true),
    ]);
    const expected = byTopicAndQos(sent);
    // At QoS 0 every message is delivered at QoS 0; at QoS 1 at the QoS it was published with
    // ([MQTT-3.3.5-1]): grouped by the published QoS, read from the payload's number.
    const published = (p: Received) => ({
      topic: p.topic ?? '',
      qos: Number(/^m(\d+):/.exec(p.payload?.toString() ?? '')?.[1]) % 2,
      payload: p.payload?.toString() ?? '',
    });
    expect(got0.every((p) => p.qos === 0)).toBe(true);
    expect(byTopicAndQos(got0.map(published))).toEqual(expected);
    expect(got1.every((p) => p.qos === published(p).qos)).toBe(true);
    expect(byTopicAndQos(got1.map(published))).toEqual(expected);
    // Nothing more was sent: a ping is answered after the last delivery.
    await fast.settle();
    await persistent.settle();
    expect(fast.pending(TYPE.PUBLISH)).toEqual([]);
    expect(persistent.pending(TYPE.PUBLISH)).toEqual([]);
  });

  it('a subscriber that drops in the middle of a burst costs the others nothing', async () => {
    const b = await brokers.start();
    const leaving = await subscriber(b.port, 'leaving', 0);
    const staying = await subscriber(b.port, 'staying', 0);
    const pub = await client(b.port, 'pub');
    const { packets, sent } = burst();
    pub.send(packets);
    await leaving.next(TYPE.PUBLISH);
    await leaving.drop();
    const got = await deliveries(staying, BURST, false);
    expect(got.map((p) => p.payload?.toString()).sort()).toEqual(sent.map((m) => m.payload).sort());
    // The broker still answers, the publisher got a PUBACK for each of its QoS 1 messages, and
    // every message went through.
    await pub.settle();
    expect(pub.pending(TYPE.PUBACK).map((p) => p.id)).toEqual(
      sent.map((_, i) => i + 1).filter((id) => id % 2 === 1),
    );
    await until(() => b.stats.messagesIn === BURST, 'every publish through the broker');
  });

  it('delivers a burst of 300 publishes in one write, then a large one sent in pieces, in order', async () => {
    const b = await brokers.start();
    const sub = await client(b.port, 'sub');
    sub.send(subscribe(1, [['pos/replies/hq/#', 1]]));
    await sub.next(TYPE.SUBACK);
    const pub = await client(b.port, 'pub');
    const packets: Buffer[] = [];
    for (let i = 1; i <= 300; i += 1)
      packets.push(publish({ topic: 'pos/replies/hq/r', payload: `m${i}`, qos: 1, id: i }));
    pub.send(...packets);
    const large = publish({
      topic: 'pos/replies/hq/r',
      payload: Buffer.alloc(200_000, 0x61),
      qos: 1,
      id: 301,
    });
    for (const [from, to] of [
      [0, 2],
      [2, 3],
      [3, 70_000],
      [70_000, large.length],
    ] as const)
      pub.send(large.subarray(from, to));
    const got: string[] = [];
    for (let i = 0; i < 301; i += 1) {
      const p = await sub.next(TYPE.PUBLISH);
      got.push(p.payload!.length > 100 ? `large ${p.payload!.length}` : p.payload!.toString());
      sub.send(ack(TYPE.PUBACK, p.id!));
    }
    expect(got).toEqual([...packets.map((_, i) => `m${i + 1}`), 'large 200000']);
  });

  it('handles a DISCONNECT at the end of a burst before the connection closes: no last will', async () => {
    const b = await brokers.start();
    const sub = await client(b.port, 'sub');
    sub.send(subscribe(1, [['pos/replies/hq/#', 0]]));
    await sub.next(TYPE.SUBACK);
    const pub = await client(b.port, 'pub', true, { topic: 'pos/replies/hq/will', payload: 'gone' });
    const packets: Buffer[] = [];
    for (let i = 1; i <= 50; i += 1) packets.push(publish({ topic: 'pos/replies/hq/r', payload: `m${i}` }));
    pub.send(...packets, disconnect());
    pub.socket.end();
    await pub.waitClosed();
    for (let i = 1; i <= 50; i += 1) expect((await sub.next(TYPE.PUBLISH)).payload?.toString()).toBe(`m${i}`);
    // A PINGRESP proves the broker has handled everything sent before it; no will came first.
    sub.send(pingreq());
    await sub.next(TYPE.PINGRESP);
    expect(sub.pending(TYPE.PUBLISH)).toEqual([]);
  });
});
