/**
 * Contract 6.1, "nothing unbounded after login" (issue 26 item 8), against an attacker's
 * register on a real store broker: retained task statuses beyond `maxRetainedStatuses` are
 * refused (a clear frees a place, also a controller's), a state whose `version` is over 64
 * characters is neither delivered nor kept, a status whose report exceeds the report cap is
 * dropped, and QoS 2 messages never released (no PUBREL) are
 * capped at 64 per client.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId, topics } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { silent } from '../support/loggers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { MqttClients } from '../support/mqtt-clients.ts';
import { ack, publish, RawClient, TYPE } from '../support/raw-mqtt.ts';

const NS = 'stores/bounds';
const CAP = 5;
let broker: StoreBroker;
let url: string;
const clients = new MqttClients();
const watchers: TestClient[] = [];

beforeAll(async () => {
  broker = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: NS,
    users: [
      { name: 'evil', password: 'evil-pw', role: 'device' },
      { name: 'hq', password: 'hq-pw', role: 'controller' },
    ],
    limits: { maxRetainedStatuses: CAP, maxReportBytes: 100 },
    logger: silent,
  });
  await broker.start();
  url = `mqtt://127.0.0.1:${broker.port}`;
});
afterEach(async () => {
  await clients.closeAll();
  await Promise.all(watchers.splice(0).map((w) => w.close()));
});
afterAll(() => broker?.stop());

const evil = () =>
  clients.connect(url, { username: 'evil', password: 'evil-pw', clientId: deviceClientId(NS, 'evil') });

/**
 * A fresh controller subscription: what the broker keeps retained under `filter`, once `count`
 * retained messages came and a barrier after them shows no more follow.
 */
async function retained(filter: string, barrier: string, count: number): Promise<Received[]> {
  const watcher = await TestClient.connect(url, [filter, barrier], { username: 'hq', password: 'hq-pw' });
  watchers.push(watcher);
  await watcher.waitForCount((m) => m.retain, count, `${count} retained`);
  await watcher.barrier(barrier);
  return watcher.messages.filter((m) => m.retain);
}

describe('what a logged-in register may hold (contract 6.1)', () => {
  it('retained task statuses of one device: at most the cap; a clear frees a place', async () => {
    const device = await evil();
    const statuses = topics.deviceTaskStatuses(NS, 'evil');
    for (let id = 1; id <= CAP + 3; id += 1) {
      await device.publishAsync(topics.taskStatus(NS, 'evil', id), `s${id}`, { qos: 1, retain: true });
    }
    // An update of a topic it already holds is fine.
    await device.publishAsync(topics.taskStatus(NS, 'evil', 1), 's1 again', { qos: 1, retain: true });
    const kept = await retained(statuses, `${NS}/replies/b1`, CAP);
    expect(kept.map((m) => m.payload.toString()).sort()).toEqual(['s1 again', 's2', 's3', 's4', 's5']);
    expect(broker.stats.publishDenied).toBe(3);

    // A controller forgets task 2 (a zero-byte retained clear): the next status finds a place.
    const hq = await clients.connect(url, { username: 'hq', password: 'hq-pw' });
    await hq.publishAsync(topics.taskStatus(NS, 'evil', 2), '', { qos: 1, retain: true });
    await device.publishAsync(topics.taskStatus(NS, 'evil', 9), 's9', { qos: 1, retain: true });
    await device.publishAsync(topics.taskStatus(NS, 'evil', 10), 's10', { qos: 1, retain: true });
    const after = await retained(statuses, `${NS}/replies/b2`, CAP);
    expect(after.map((m) => m.payload.toString()).sort()).toEqual(['s1 again', 's3', 's4', 's5', 's9']);
  });

  it('a state whose version has more than 64 characters is refused; 64 pass', async () => {
    const device = await evil();
    const state = (version: string) =>
      JSON.stringify({
        online: true,
        deviceId: 'evil',
        bootId: 'b',
        installation: 'pos',
        version,
        startedAt: new Date().toISOString(),
        groups: ['all'],
      });
    await device.publishAsync(topics.state(NS, 'evil'), state('v'.repeat(64)), { qos: 1, retain: true });
    await device.publishAsync(topics.state(NS, 'evil'), state('v'.repeat(65)), { qos: 1, retain: true });
    const kept = await retained(topics.state(NS, 'evil'), `${NS}/replies/b3`, 1);
    expect(kept.map((m) => (JSON.parse(m.payload.toString()) as { version: string }).version.length)).toEqual(
      [64],
    );
  });

  it('QoS 2 messages awaiting PUBREL: 64 per client; the 65th closes the connection', async () => {
    const login = { username: 'evil', password: 'evil-pw', clientId: deviceClientId(NS, 'evil') };
    const topic = topics.taskStatus(NS, 'evil', 1);
    const { client } = await RawClient.connected(broker.port, login);
    for (let id = 1; id <= 64; id += 1) client.send(publish({ topic, payload: `q${id}`, qos: 2, id }));
    await client.settle();
    expect(client.pending(TYPE.PUBREC)).toHaveLength(64);
    expect(client.closed).toBe(false);
    // Releasing one frees its place.
    client.send(ack(TYPE.PUBREL, 1));
    await client.next(TYPE.PUBCOMP);
    client.send(publish({ topic, payload: 'q65', qos: 2, id: 65 }));
    await client.settle();
    expect(client.closed).toBe(false);
    client.send(publish({ topic, payload: 'q66', qos: 2, id: 66 }));
    await client.waitClosed();
  });

  it('a status whose report exceeds the cap (UTF-8 bytes) is dropped; one at the cap passes', async () => {
    const device = await evil();
    const topic = topics.taskStatus(NS, 'evil', 42);
    const live = await TestClient.connect(url, [topic, `${NS}/replies/b4`], {
      username: 'hq',
      password: 'hq-pw',
    });
    watchers.push(live);
    const status = (report: string) =>
      JSON.stringify({
        id: 42,
        deviceId: 'evil',
        bootId: 'b',
        seq: 1,
        status: 'FINISHED',
        report,
        queuedAt: new Date().toISOString(),
      });
    await device.publishAsync(topic, status('x'.repeat(101)), { qos: 1 });
    await device.publishAsync(topic, status('é'.repeat(50)), { qos: 1 }); // 100 bytes
    await device.publishAsync(topic, status('é'.repeat(51)), { qos: 1 }); // 102 bytes
    await live.waitFor((m) => m.topic === topic, 'the status at the cap');
    await live.barrier(`${NS}/replies/b4`);
    const reports = live.messages
      .filter((m) => m.topic === topic)
      .map((m) => (m.json as { report: string }).report);
    expect(reports).toEqual(['é'.repeat(50)]);
  });
});
