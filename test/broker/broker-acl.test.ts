/**
 * The store broker's ACL and authentication over real sockets (docs/mqtt.md, README "Command line",
 * docs/broker.md): mqtt.js clients against a StoreBroker on free ports, namespace `stores/042`.
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { DENIED_PUBLISH_TOPIC, StoreBroker } from '../../broker/store-broker.ts';
import { silent } from '../support/loggers.ts';
import { MqttClients } from '../support/mqtt-clients.ts';

const NS = 'stores/042';
const CTL = { username: 'ctl', password: 'pa:ss:word' };
// A device user connects with its own client id only (contract 6.1).
const D1 = { username: 'd1', password: 'd1-secret', clientId: deviceClientId(NS, 'd1') };
const OBS = { username: 'obs', password: 'obs-secret' };

interface Received {
  topic: string;
  payload: string;
  retain: boolean;
}

const clients = new MqttClients();

/** Connects (no reconnect) and resolves on CONNACK 0; rejects with the CONNACK code otherwise. */
function connect(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  return clients.connect(url, options);
}

async function refusalCode(url: string, options: IClientOptions = {}): Promise<number | undefined> {
  try {
    await connect(url, options);
  } catch (error) {
    return (error as { code?: number }).code;
  }
  throw new Error('the connection was accepted');
}

/** Every message the client receives from now on, and a wait for one that matches. */
function collect(client: MqttClient) {
  const messages: Received[] = [];
  const waiters: { match: (m: Received) => boolean; resolve: (m: Received) => void }[] = [];
  client.on('message', (topic, payload, packet) => {
    const message = { topic, payload: payload.toString(), retain: packet.retain };
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.match(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  return {
    messages,
    next(match: (m: Received) => boolean, timeoutMs = 5000): Promise<Received> {
      const seen = messages.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching message')), timeoutMs);
        waiters.push({
          match,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
  };
}

/** The QoS the broker granted to one filter: 0-2, or 128 when refused ([MQTT-3.9.3]). */
async function granted(client: MqttClient, filter: string): Promise<number | undefined> {
  try {
    const grants = await client.subscribeAsync(filter, { qos: 1 });
    return grants[0]?.qos;
  } catch (error) {
    return (error as { packet?: { granted?: number[] } }).packet?.granted?.[0];
  }
}

function closed(client: MqttClient): Promise<void> {
  return new Promise((resolve) => (client.connected ? client.once('close', () => resolve()) : resolve()));
}

afterEach(async () => {
  await clients.closeAll();
});

describe('store broker ACL and authentication', () => {
  let broker: StoreBroker;
  let url: string;

  beforeAll(async () => {
    broker = new StoreBroker({
      port: 0,
      host: '127.0.0.1',
      wsPort: 0,
      ns: NS,
      users: [
        { name: CTL.username, password: CTL.password, role: 'controller' },
        { name: D1.username, password: D1.password, role: 'device' },
        { name: 'd2', password: 'd2-secret', role: 'device' },
        { name: OBS.username, password: OBS.password, role: 'observer' },
      ],
      logger: silent,
    });
    await broker.start();
    url = `mqtt://127.0.0.1:${broker.port}`;
  });
  afterAll(() => broker.stop());

  it('lets a device publish its own state and task status, retained, to a controller', async () => {
    const ctl = await connect(url, CTL);
    const seen = collect(ctl);
    expect(await granted(ctl, `${NS}/#`)).toBe(1);
    const device = await connect(url, D1);
    await device.publishAsync(`${NS}/devices/d1/state`, '{"online":true}', { qos: 1, retain: true });
    await device.publishAsync(`${NS}/devices/d1/tasks/7/status`, '{"id":7}', { qos: 1, retain: true });
    await seen.next((m) => m.topic === `${NS}/devices/d1/tasks/7/status`);
    expect(seen.messages.map((m) => m.topic)).toEqual([
      `${NS}/devices/d1/state`,
      `${NS}/devices/d1/tasks/7/status`,
    ]);
  });

  it("drops a device's publish to another device's topics or to scripts, keeps the connection", async () => {
    const ctl = await connect(url, CTL);
    const seen = collect(ctl);
    await ctl.subscribeAsync(`${NS}/#`, { qos: 1 });
    const device = await connect(url, D1);
    const before = broker.stats.publishDenied;
    for (const topic of [
      `${NS}/devices/d2/state`,
      `${NS}/devices/d2/tasks/1/status`,
      `${NS}/devices/d2/replies/r1`,
      `${NS}/replies/ctl/r1`,
      `${NS}/devices/d1/scripts`,
      `${NS}/groups/all/scripts`,
      'pos/devices/d1/state',
      DENIED_PUBLISH_TOPIC,
    ]) {
      // Acknowledged like any QoS 1 publish ([MQTT-3.3.5-2]), then dropped.
      await device.publishAsync(topic, 'forged', { qos: 1 });
    }
    expect(device.connected).toBe(true);
    await device.publishAsync(`${NS}/devices/d1/state`, 'marker', { qos: 1 });
    await seen.next((m) => m.payload === 'marker');
    // Earlier tests left retained messages; only live ones count here.
    expect(seen.messages.filter((m) => !m.retain).map((m) => m.payload)).toEqual(['marker']);
    expect(broker.stats.publishDenied - before).toBe(8);
  });

  it('lets a device subscribe to its scripts, its groups and its own topics only', async () => {
    const device = await connect(url, D1);
    expect(await granted(device, `${NS}/devices/d1/scripts`)).toBe(1);
    expect(await granted(device, `${NS}/groups/+/scripts`)).toBe(1);
    expect(await granted(device, `${NS}/groups/all/scripts`)).toBe(1);
    expect(await granted(device, `${NS}/devices/d1/tasks/+/status`)).toBe(1);
    expect(await granted(device, `${NS}/devices/d1/state`)).toBe(1);
    for (const filter of [
      `${NS}/devices/d2/tasks/+/status`,
      `${NS}/devices/+/state`,
      `${NS}/devices/d2/scripts`,
      `${NS}/groups/#`,
      `${NS}/#`,
      `${NS}/replies/#`,
      '#',
      '$SYS/#',
    ]) {
      expect(await granted(device, filter), filter).toBe(128);
    }
  });

  it('lets a controller send scripts to one device and to a group', async () => {
    const device = await connect(url, D1);
    const got = collect(device);
    await device.subscribeAsync([`${NS}/devices/d1/scripts`, `${NS}/groups/all/scripts`], { qos: 1 });
    const ctl = await connect(url, CTL);
    await ctl.publishAsync(`${NS}/devices/d1/scripts`, '{"script":"PRINT one"}', { qos: 1 });
    await ctl.publishAsync(`${NS}/groups/all/scripts`, '{"script":"PRINT all"}', { qos: 1 });
    await got.next((m) => m.topic === `${NS}/groups/all/scripts`);
    expect(got.messages.map((m) => m.payload)).toEqual(['{"script":"PRINT one"}', '{"script":"PRINT all"}']);
    expect(await granted(ctl, `${NS}/devices/+/tasks/+/status`)).toBe(1);
    expect(await granted(ctl, 'stores/043/#')).toBe(128);
    expect(await granted(ctl, '#')).toBe(128);
  });

  it("carries a device's replies under its own subtree only and refuses to retain them (contract 3.1)", async () => {
    const ctl = await connect(url, CTL);
    const seen = collect(ctl);
    await ctl.subscribeAsync(`${NS}/devices/+/replies/#`, { qos: 1 });
    const device = await connect(url, D1);
    await device.publishAsync(`${NS}/devices/d1/replies/r1`, 'retained reply', { qos: 1, retain: true });
    await device.publishAsync(`${NS}/devices/d2/replies/r1`, 'for another register', { qos: 1 });
    await device.publishAsync(`${NS}/devices/d1/replies/r1`, '{"requestId":"r1"}', { qos: 1 });
    const reply = await seen.next(() => true);
    expect(reply).toEqual({
      topic: `${NS}/devices/d1/replies/r1`,
      payload: '{"requestId":"r1"}',
      retain: false,
    });
    expect(seen.messages).toHaveLength(1);
  });

  it('lets a controller clear, but never write, a device state', async () => {
    const state = `${NS}/devices/d1/state`;
    const device = await connect(url, D1);
    await device.publishAsync(state, '{"online":true}', { qos: 1, retain: true });
    const ctl = await connect(url, CTL);
    // Only the device speaks for itself: a forged retained state is dropped.
    await ctl.publishAsync(state, '{"online":false}', { qos: 1, retain: true });
    const reader = await connect(url, OBS);
    const seen = collect(reader);
    await reader.subscribeAsync(state, { qos: 1 });
    expect(await seen.next(() => true)).toEqual({ topic: state, payload: '{"online":true}', retain: true });
    // A zero-byte retained message clears it (forgetting a decommissioned device).
    await ctl.publishAsync(state, '', { qos: 1, retain: true });
    const later = await connect(url, OBS);
    const laterSeen = collect(later);
    await later.subscribeAsync(state, { qos: 1 });
    await device.publishAsync(state, 'marker', { qos: 1 });
    expect(await laterSeen.next(() => true)).toEqual({ topic: state, payload: 'marker', retain: false });
  });

  it('lets an observer read everything and publish nothing', async () => {
    const device = await connect(url, D1);
    const got = collect(device);
    await device.subscribeAsync(`${NS}/devices/d1/scripts`, { qos: 1 });
    const observer = await connect(url, OBS);
    expect(await granted(observer, `${NS}/#`)).toBe(1);
    expect(await granted(observer, '#')).toBe(128);
    await observer.publishAsync(`${NS}/devices/d1/scripts`, 'from observer', { qos: 1 });
    await observer.publishAsync(`${NS}/devices/d1/scripts`, 'from observer, qos 0', { qos: 0 });
    const ctl = await connect(url, CTL);
    await ctl.publishAsync(`${NS}/devices/d1/scripts`, 'marker', { qos: 1 });
    await got.next((m) => m.payload === 'marker');
    expect(got.messages.map((m) => m.payload)).toEqual(['marker']);
  });

  it('refuses a wrong password and an unknown user with CONNACK 4, anonymous with 5', async () => {
    expect(await refusalCode(url, { username: CTL.username, password: 'pa:ss' })).toBe(4);
    expect(await refusalCode(url, { username: 'nobody', password: 'x' })).toBe(4);
    expect(await refusalCode(url, { username: D1.username })).toBe(4);
    expect(await refusalCode(url)).toBe(5);
    expect(broker.stats.connectRefused).toBeGreaterThanOrEqual(4);
  });

  it('refuses a device whose last will is not its own state topic', async () => {
    const will = {
      topic: `${NS}/devices/d2/state`,
      payload: Buffer.from('{}'),
      qos: 1 as const,
      retain: true,
    };
    expect(await refusalCode(url, { ...D1, will })).toBe(5);
  });

  it("refuses another user's connected client id, lets the owner take it over", async () => {
    const device = await connect(url, D1);
    expect(await refusalCode(url, { ...OBS, clientId: D1.clientId })).toBe(5);
    expect(device.connected).toBe(true);
    const gone = closed(device);
    await connect(url, D1);
    await gone;
    const ctl = await connect(url, { ...CTL, clientId: 'register-1' });
    expect(await refusalCode(url, { ...OBS, clientId: 'register-1' })).toBe(2);
    expect(ctl.connected).toBe(true);
  });

  it('publishes a device last will, retained, when its connection drops', async () => {
    const ctl = await connect(url, CTL);
    const seen = collect(ctl);
    await ctl.subscribeAsync(`${NS}/devices/d1/state`, { qos: 1 });
    const offline = '{"online":false,"deviceId":"d1","bootId":"b1"}';
    const device = await connect(url, {
      ...D1,
      will: { topic: `${NS}/devices/d1/state`, payload: Buffer.from(offline), qos: 1, retain: true },
    });
    await device.publishAsync(`${NS}/devices/d1/state`, '{"online":true}', { qos: 1, retain: true });
    await seen.next((m) => m.payload === '{"online":true}');
    device.stream.destroy();
    expect((await seen.next((m) => m.payload === offline)).topic).toBe(`${NS}/devices/d1/state`);
    const late = await connect(url, OBS);
    const lateSeen = collect(late);
    await late.subscribeAsync(`${NS}/devices/d1/state`, { qos: 1 });
    expect(await lateSeen.next(() => true)).toEqual({
      topic: `${NS}/devices/d1/state`,
      payload: offline,
      retain: true,
    });
  });

  it('delivers a message matching two subscriptions of one client once', async () => {
    const ctl = await connect(url, CTL);
    const seen = collect(ctl);
    await ctl.subscribeAsync([`${NS}/devices/#`, `${NS}/devices/d1/tasks/+/status`], { qos: 1 });
    const device = await connect(url, D1);
    await device.publishAsync(`${NS}/devices/d1/tasks/9/status`, 'once', { qos: 1 });
    await device.publishAsync(`${NS}/devices/d1/tasks/9/status`, 'marker', { qos: 1 });
    await seen.next((m) => m.payload === 'marker');
    expect(seen.messages.filter((m) => m.payload === 'once')).toHaveLength(1);
  });

  it('speaks MQTT over WebSocket', async () => {
    const wsClient = await connect(`ws://127.0.0.1:${broker.wsPort}`, CTL);
    const seen = collect(wsClient);
    await wsClient.subscribeAsync(`${NS}/devices/+/state`, { qos: 1 });
    const device = await connect(url, D1);
    await device.publishAsync(`${NS}/devices/d1/state`, 'over ws', { qos: 1 });
    expect((await seen.next((m) => m.payload === 'over ws')).topic).toBe(`${NS}/devices/d1/state`);
    expect(await refusalCode(`ws://127.0.0.1:${broker.wsPort}`, { username: 'ctl', password: 'no' })).toBe(4);
  });
});

describe('store broker with anonymous clients allowed', () => {
  let broker: StoreBroker;
  let url: string;

  beforeAll(async () => {
    broker = new StoreBroker({
      port: 0,
      host: '127.0.0.1',
      ns: 'pos',
      users: [{ name: 'd1', password: 'pw', role: 'device' }],
      allowAnonymous: true,
      logger: silent,
    });
    await broker.start();
    url = `mqtt://127.0.0.1:${broker.port}`;
  });
  afterAll(() => broker.stop());

  it('treats anonymous clients as controllers and still checks given credentials', async () => {
    const anonymous = await connect(url);
    expect(await granted(anonymous, 'pos/#')).toBe(1);
    expect(await granted(anonymous, 'other/#')).toBe(128);
    const device = await connect(url, {
      username: 'd1',
      password: 'pw',
      clientId: deviceClientId('pos', 'd1'),
    });
    const got = collect(device);
    await device.subscribeAsync('pos/devices/d1/scripts', { qos: 1 });
    await anonymous.publishAsync('pos/devices/d1/scripts', 'from anonymous', { qos: 1 });
    expect((await got.next(() => true)).payload).toBe('from anonymous');
    expect(await refusalCode(url, { username: 'd1', password: 'wrong' })).toBe(4);
  });
});
