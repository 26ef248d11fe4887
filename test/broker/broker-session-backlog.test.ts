/**
 * `--max-session-inflight` (broker/aedes-fixes/session-backlog.ts, docs/decisions/session-backlog.md):
 * while a connected persistent session holds that many unacknowledged QoS 1 messages, a publish
 * bound for it waits for its PUBACK and aedes reads nothing more from the publisher, for as long
 * as the session stays full; nothing is lost, and a session that goes, or a publisher that is full
 * itself, blocks nobody. Raw sockets on a real store broker; every wait is for a packet or a count.
 */
import { describe, expect, it } from 'vitest';
import type { StoreBroker } from '../../broker/store-broker.ts';
import { brokerPerTest, HQ } from '../support/broker-per-test.ts';
import { ack, pingreq, publish, RawClient, type Received, subscribe, TYPE } from '../support/raw-mqtt.ts';
import { until } from '../support/waits.ts';

const TOPIC = 'pos/replies/hq/r';
const brokers = brokerPerTest();

async function client(port: number, clientId: string, clean: boolean): Promise<RawClient> {
  const { client: c, connack } = await RawClient.connected(port, { clientId, clean, ...HQ });
  brokers.opened.push(c);
  expect(connack.returnCode).toBe(0);
  return c;
}

/** A persistent session subscribed QoS 1 to `topic`, which acknowledges nothing unless told. */
async function persistentSubscriber(port: number, clientId = 'slow-sub', topic = TOPIC): Promise<RawClient> {
  const sub = await client(port, clientId, false);
  sub.send(subscribe(1, [[topic, 1]]));
  expect((await sub.next(TYPE.SUBACK)).codes).toEqual([1]);
  return sub;
}

function publishes(from: number, to: number, topic = TOPIC): Buffer[] {
  const packets: Buffer[] = [];
  for (let id = from; id <= to; id += 1) packets.push(publish({ topic, payload: `m${id}`, qos: 1, id }));
  return packets;
}

async function deliveries(sub: RawClient, count: number): Promise<Received[]> {
  const got: Received[] = [];
  for (let i = 0; i < count; i += 1) got.push(await sub.next(TYPE.PUBLISH));
  return got;
}

/** The publisher's next read is not taken while it is held: its PINGREQ stays unanswered. */
async function expectHeld(b: StoreBroker, pub: RawClient, sub: RawClient): Promise<void> {
  await until(() => b.stats.publishesHeld > 0, 'a publish held');
  pub.send(pingreq());
  await sub.settle();
  expect([pub.pending(TYPE.PUBACK), pub.pending(TYPE.PINGRESP), sub.pending(TYPE.PUBLISH)]).toEqual([
    [],
    [],
    [],
  ]);
}

describe('persistent session bound (--max-session-inflight)', () => {
  it('holds a publisher while the session is full and delivers every message once, in order', async () => {
    const b = await brokers.start({ maxSessionInflight: 3 });
    const sub = await persistentSubscriber(b.port);
    const pub = await client(b.port, 'flooder', true);
    pub.send(...publishes(1, 3));
    const first = await deliveries(sub, 3);
    expect((await Promise.all([1, 2, 3].map(() => pub.next(TYPE.PUBACK)))).map((p) => p.id)).toEqual([
      1, 2, 3,
    ]);
    pub.send(...publishes(4, 12));
    await expectHeld(b, pub, sub);
    // Acknowledging as it goes: each acknowledgement below the bound lets held publishes through.
    const got = [...first];
    for (const p of first) sub.send(ack(TYPE.PUBACK, p.id!));
    while (got.length < 12) {
      const next = await sub.next(TYPE.PUBLISH);
      got.push(next);
      sub.send(ack(TYPE.PUBACK, next.id!));
    }
    expect(got.map((p) => p.payload?.toString())).toEqual(Array.from({ length: 12 }, (_, i) => `m${i + 1}`));
    const acked = await Promise.all(Array.from({ length: 9 }, () => pub.next(TYPE.PUBACK)));
    expect(acked.map((p) => p.id)).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12]);
    await pub.next(TYPE.PINGRESP);
    await sub.settle();
    expect(sub.pending(TYPE.PUBLISH)).toEqual([]); // none twice
  });

  it('lets held publishes through when the full session disconnects; its queue keeps them all', async () => {
    const b = await brokers.start({ maxSessionInflight: 2 });
    const sub = await persistentSubscriber(b.port);
    const pub = await client(b.port, 'flooder', true);
    pub.send(...publishes(1, 2));
    await deliveries(sub, 2);
    await pub.next(TYPE.PUBACK);
    await pub.next(TYPE.PUBACK);
    pub.send(...publishes(3, 4));
    await expectHeld(b, pub, sub);
    await sub.drop();
    expect((await pub.next(TYPE.PUBACK)).id).toBe(3);
    expect((await pub.next(TYPE.PUBACK)).id).toBe(4);
    await pub.next(TYPE.PINGRESP);
    // Offline, the session queues without holding anyone (what it is for); resumed, it gets it all.
    pub.send(...publishes(5, 6));
    expect((await pub.next(TYPE.PUBACK)).id).toBe(5);
    expect((await pub.next(TYPE.PUBACK)).id).toBe(6);
    const again = await client(b.port, 'slow-sub', false);
    const resent = await deliveries(again, 6);
    expect(resent.map((p) => p.payload?.toString())).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
  });

  it('never holds QoS 0, nor a publisher whose own session is full (its PUBACKs must be read)', async () => {
    const b = await brokers.start({ maxSessionInflight: 1 });
    const a = await persistentSubscriber(b.port, 'a', 'pos/replies/hq/a');
    const c = await persistentSubscriber(b.port, 'c', 'pos/replies/hq/c');
    a.send(publish({ topic: 'pos/replies/hq/c', payload: 'a1', qos: 1, id: 1 }));
    await c.next(TYPE.PUBLISH); // c is full
    c.send(publish({ topic: 'pos/replies/hq/a', payload: 'c1', qos: 1, id: 1 }));
    await a.next(TYPE.PUBLISH); // a is full too
    // a publishes to full c: holding a, full itself, would stop reading the PUBACKs it owes.
    a.send(publish({ topic: 'pos/replies/hq/c', payload: 'a2', qos: 1, id: 2 }));
    c.send(publish({ topic: 'pos/replies/hq/a', payload: 'c0', qos: 0 }));
    expect((await a.next((p) => p.type === TYPE.PUBACK && p.id === 2)).id).toBe(2);
    expect((await c.next(TYPE.PUBLISH)).payload?.toString()).toBe('a2');
    expect((await a.next(TYPE.PUBLISH)).payload?.toString()).toBe('c0');
    expect(b.stats.publishesHeld).toBe(0);
  });

  it('holds nothing with 0', async () => {
    const b = await brokers.start({ maxSessionInflight: 0 });
    const sub = await persistentSubscriber(b.port);
    const pub = await client(b.port, 'flooder', true);
    pub.send(...publishes(1, 20));
    expect((await deliveries(sub, 20)).at(-1)?.payload?.toString()).toBe('m20');
    for (let i = 0; i < 20; i += 1) await pub.next(TYPE.PUBACK);
    expect(b.stats.publishesHeld).toBe(0);
  });
});
