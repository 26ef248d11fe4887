/**
 * Backpressure for persistent sessions (broker/session-backlog.ts, docs/broker.md "Limits"): while
 * a connected persistent session holds `maxSessionBacklog` unacknowledged QoS 1 messages, a QoS 1
 * publish bound for it waits for its PUBACK (and aedes reads nothing more from the publisher)
 * until the subscriber acknowledges, or `sessionBacklogWaitMs` passes. Nothing is lost. Raw
 * sockets on a real store broker; every wait is for a packet, with a time-out.
 */
import { describe, expect, it } from 'vitest';
import { brokerPerTest, HQ } from './support/broker-per-test.ts';
import { ack, publish, RawClient, type Received, subscribe, TYPE } from './support/raw-mqtt.ts';
import { until } from './support/waits.ts';

const USER = HQ;
const TOPIC = 'pos/replies/hq/r';
const brokers = brokerPerTest();
const { opened } = brokers;

async function client(port: number, clientId: string, clean: boolean): Promise<RawClient> {
  const { client: c, connack } = await RawClient.connected(port, { clientId, clean, ...USER });
  opened.push(c);
  expect(connack.returnCode).toBe(0);
  return c;
}

/** A persistent session subscribed QoS 1 to TOPIC, which acknowledges nothing unless told. */
async function persistentSubscriber(port: number): Promise<RawClient> {
  const sub = await client(port, 'slow-sub', false);
  sub.send(subscribe(1, [[TOPIC, 1]]));
  expect((await sub.next(TYPE.SUBACK)).codes).toEqual([1]);
  return sub;
}

function publishes(from: number, to: number): Buffer[] {
  const packets: Buffer[] = [];
  for (let id = from; id <= to; id += 1)
    packets.push(publish({ topic: TOPIC, payload: `m${id}`, qos: 1, id }));
  return packets;
}

async function deliveries(sub: RawClient, count: number): Promise<Received[]> {
  const got: Received[] = [];
  for (let i = 0; i < count; i += 1) got.push(await sub.next(TYPE.PUBLISH));
  return got;
}

describe('persistent session backlog', () => {
  it('defaults to 1000 unacknowledged messages and a 2 s hold', async () => {
    const { limits } = await brokers.start({});
    expect(limits.maxSessionBacklog).toBe(1000);
    expect(limits.sessionBacklogWaitMs).toBe(2000);
  });

  it('holds a publish bound for a full session until the subscriber acknowledges; nothing is lost', async () => {
    const b = await brokers.start({ maxSessionBacklog: 3, sessionBacklogWaitMs: 60_000 });
    const sub = await persistentSubscriber(b.port);
    const pub = await client(b.port, 'flooder', true);
    pub.send(...publishes(1, 3));
    const first = await deliveries(sub, 3);
    for (let i = 0; i < 3; i += 1) await pub.next(TYPE.PUBACK);
    // The session is full: the next two publishes are not acknowledged, nor delivered (aedes reads
    // nothing more from the publisher meanwhile, so a PINGREQ of its would not be answered either).
    pub.send(...publishes(4, 5));
    await until(() => b.sessionBacklog.held === 2, 'both publishes held', 5000);
    await sub.settle();
    expect(pub.pending(TYPE.PUBACK)).toEqual([]);
    expect(sub.pending(TYPE.PUBLISH)).toEqual([]);
    // One acknowledgement makes room: the held publishes go through.
    sub.send(ack(TYPE.PUBACK, first[0]!.id!));
    const acked = [await pub.next(TYPE.PUBACK), await pub.next(TYPE.PUBACK)].map((p) => p.id).sort();
    expect(acked).toEqual([4, 5]);
    const later = await deliveries(sub, 2);
    expect([...first, ...later].map((p) => p.payload?.toString())).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
    // Both held publishes were released together: the bound is exceeded by what was held (one read).
    expect(b.sessionBacklog).toMatchObject({ held: 2, timedOut: 0, peak: 4 });
  });

  it('passes a held publish on after sessionBacklogWaitMs when the subscriber never acknowledges', async () => {
    const b = await brokers.start({ maxSessionBacklog: 2, sessionBacklogWaitMs: 200 });
    const sub = await persistentSubscriber(b.port);
    const pub = await client(b.port, 'flooder', true);
    pub.send(...publishes(1, 2));
    await deliveries(sub, 2);
    pub.send(...publishes(3, 3));
    for (let i = 0; i < 3; i += 1) await pub.next(TYPE.PUBACK);
    const [third] = await deliveries(sub, 1);
    expect(third?.payload?.toString()).toBe('m3');
    expect(b.sessionBacklog).toMatchObject({ held: 1, timedOut: 1 });
  });

  it('holds nothing for a session that is offline, nor QoS 0, nor the full client itself', async () => {
    const b = await brokers.start({ maxSessionBacklog: 2, sessionBacklogWaitMs: 60_000 });
    const sub = await persistentSubscriber(b.port);
    const pub = await client(b.port, 'flooder', true);
    pub.send(...publishes(1, 2));
    await deliveries(sub, 2);
    // QoS 0 to the full session, and the full client's own QoS 1 publish: no hold.
    pub.send(publish({ topic: TOPIC, payload: 'q0', qos: 0 }));
    await sub.next((p) => p.type === TYPE.PUBLISH && p.payload?.toString() === 'q0');
    sub.send(publish({ topic: TOPIC, payload: 'own', qos: 1, id: 7 }));
    expect((await sub.next(TYPE.PUBACK)).id).toBe(7);
    await sub.next((p) => p.type === TYPE.PUBLISH && p.payload?.toString() === 'own');
    // Offline: the session keeps queueing (what it is for), publishers are not held.
    await sub.drop();
    await until(() => b.stats.clients === 1, 'the subscriber gone', 5000);
    pub.send(...publishes(3, 4));
    for (let i = 0; i < 4; i += 1) await pub.next(TYPE.PUBACK);
    expect(b.sessionBacklog.held).toBe(0);
    // Resumed, it gets every queued message.
    const again = await client(b.port, 'slow-sub', false);
    const resent = await deliveries(again, 5);
    expect(new Set(resent.map((p) => p.payload?.toString()))).toEqual(
      new Set(['m1', 'm2', 'own', 'm3', 'm4']),
    );
  });
});
