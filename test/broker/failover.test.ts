/**
 * Several broker URLs (`--mqtt-url mqtt://a:1883,mqtt://b:1883`): parsing, credentials, the
 * config and controller flag checks, and the bridge and the controller moving on to the next
 * broker when one does not answer (bridge/contract/broker-url.ts, bridge/contract/failover.ts).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseBrokerUrls, redactUrl, splitBrokerUrls } from '../../bridge/contract/broker-url.ts';
import { endpointOptions } from '../../bridge/contract/failover.ts';
import { deviceClientId, topics } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { connectionSchema, parseConnection } from '../../cli/controller-flags.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { ConfigError } from '../../src/config.ts';
import { type DirectBridge, directBridge } from '../support/bridge-device.ts';
import { silent } from '../support/loggers.ts';
import { TestClient } from '../support/mqtt.ts';
import { freePort } from '../support/ports.ts';
import { until } from '../support/waits.ts';

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('broker URL lists', () => {
  it('splits at commas that start another URL, not inside a password', () => {
    expect(splitBrokerUrls('mqtt://a:1883,mqtt://b:1883')).toEqual(['mqtt://a:1883', 'mqtt://b:1883']);
    expect(splitBrokerUrls(' mqtt://a:1 , wss://b/mqtt ,')).toEqual(['mqtt://a:1', 'wss://b/mqtt']);
    expect(splitBrokerUrls('mqtt://u:p,w@h:1')).toEqual(['mqtt://u:p,w@h:1']);
    expect(splitBrokerUrls(['mqtt://a:1,mqtt://b:2', 'ws://c:3'])).toEqual([
      'mqtt://a:1',
      'mqtt://b:2',
      'ws://c:3',
    ]);
  });

  it('gives a URL without credentials those of the first URL that has some; own ones are kept', () => {
    expect(parseBrokerUrls('mqtt://h1:1,mqtt://dev:s%3Acret@h2:2,mqtt://ops:x@h3:3')).toEqual([
      { url: 'mqtt://h1:1', username: 'dev', password: 's:cret' },
      { url: 'mqtt://h2:2', username: 'dev', password: 's:cret' },
      { url: 'mqtt://h3:3', username: 'ops', password: 'x' },
    ]);
    expect(parseBrokerUrls('mqtt://a:b@h1:1,mqtt://h2:2', { username: 'u', password: 'p' })).toEqual([
      { url: 'mqtt://h1:1', username: 'u', password: 'p' },
      { url: 'mqtt://h2:2', username: 'u', password: 'p' },
    ]);
    expect(redactUrl('mqtt://a:secret@h1:1,ws://h2:2/mqtt')).toBe('mqtt://h1:1,ws://h2:2/mqtt');
  });

  it('names the faulty URL by position, never by its text', () => {
    expect(() => parseBrokerUrls('mqtt://u:hunter2@h1:1,http://u:hunter2@h2')).toThrow(
      /^URL 2 of 2: unsupported MQTT broker URL protocol http:/,
    );
    // Not a list (no scheme after the comma): one URL, and an invalid one.
    expect(() => parseBrokerUrls('mqtt://u:hunter2@h1:1,nonsense')).toThrow(/^invalid MQTT broker URL/);
    expect(() => parseBrokerUrls(' , ')).toThrow(/no MQTT broker URL/);
    for (const raw of ['mqtt://u:hunter2@h1:1,http://u:hunter2@h2', 'mqtt://u:hunter2@h1:1,nonsense']) {
      expect(() => parseBrokerUrls(raw)).not.toThrow(/hunter2/);
    }
  });

  it('turns each URL into mqtt.js connection options', () => {
    expect(endpointOptions({ url: 'mqtt://h1:1884', username: 'u', password: 'p' })).toMatchObject({
      protocol: 'mqtt',
      host: 'h1',
      hostname: 'h1',
      port: 1884,
      username: 'u',
      password: 'p',
    });
    expect(endpointOptions({ url: 'wss://h2/mqtt?x=1' })).toMatchObject({
      protocol: 'wss',
      port: 443,
      path: '/mqtt?x=1',
    });
    expect(endpointOptions({ url: 'mqtts://[::1]' })).toMatchObject({ host: '::1', port: 8883 });
    expect(endpointOptions({ url: 'mqtt://h' }).path).toBeUndefined();
  });

  it('is what --mqtt-url accepts, for serve and for the controller commands', () => {
    const list = 'mqtt://u:p@h1:1883,mqtt://h2:1883';
    expect(parseServeConfig({ deviceId: 'd', mqttUrl: list }).mqttUrl).toBe(list);
    const problems = problemsOf(() =>
      parseServeConfig({ deviceId: 'd', mqttUrl: 'mqtt://u:hunter2@h1:1883,ftp://h2' }),
    );
    expect(problems).toEqual([
      '--mqtt-url: URL 2 of 2: unsupported MQTT broker URL protocol ftp: (expected mqtt:, mqtts:, ws: or wss:)',
    ]);
    expect(parseConnection(connectionSchema, { mqttUrl: list }).mqttUrl).toBe(list);
    expect(problemsOf(() => parseConnection(connectionSchema, {}))).toEqual([
      expect.stringMatching(/^--mqtt-url: required: the store broker/),
    ]);
    expect(problemsOf(() => parseConnection(connectionSchema, { mqttUrl: 'mqtt://h1:1,http://x' }))).toEqual([
      expect.stringMatching(/^--mqtt-url: URL 2 of 2: unsupported/),
    ]);
  });
});

describe('failing over to the next broker of the list', () => {
  const NS = 'fo';
  let broker: StoreBroker;
  let live: string;
  let dead: string;
  const bridges: DirectBridge[] = [];
  const controllers: StoreController[] = [];

  beforeAll(async () => {
    broker = new StoreBroker({
      port: 0,
      host: '127.0.0.1',
      ns: NS,
      users: [
        { name: 'hq', password: 'hq-pw', role: 'controller' },
        { name: 'till-1', password: 'till-pw', role: 'device' },
      ],
      logger: silent,
    });
    await broker.start();
    live = `mqtt://127.0.0.1:${broker.port}`;
    // Nothing listens there (a port that was free a moment ago).
    dead = `mqtt://127.0.0.1:${await freePort()}`;
  });
  afterEach(async () => {
    await Promise.all(bridges.splice(0).map((b) => b.stop()));
    await Promise.all(controllers.splice(0).map((c) => c.stop()));
  });
  afterAll(async () => {
    await broker.stop();
  });

  it('a device whose first broker does not answer connects to the next, with the credentials of the list', async () => {
    const device = directBridge({
      url: `${dead},mqtt://till-1:till-pw@127.0.0.1:${broker.port}`,
      ns: NS,
      deviceId: 'till-1',
      reconnectPeriodMs: 100,
    });
    bridges.push(device);
    await device.bridge.start();
    await until(() => device.bridge.health().state === 'connected', 'the bridge connected');
    expect(device.bridge.health()).toMatchObject({ state: 'connected', url: live });
  });

  it('a device answers a late last will of its own boot, received while connected, with its online state', async () => {
    // What the surviving instances of a crashed one do minutes later (aedes' will sweep), here
    // played by a second connection of the same device user, with the register's own client id
    // (the only one its user may hold): the device answers the stale will with its online state.
    const url = `mqtt://till-1:till-pw@127.0.0.1:${broker.port}`;
    const device = directBridge({ url, ns: NS, deviceId: 'till-1' });
    bridges.push(device);
    await device.bridge.start();
    const bootId = device.bridge.bootId;
    const stateTopic = topics.state(NS, 'till-1');
    const watch = await TestClient.connect(live, [stateTopic], { username: 'hq', password: 'hq-pw' });
    try {
      const isOnline = (m: { topic: string; json: unknown }): boolean =>
        (m.json as { online?: boolean; bootId?: string } | undefined)?.online === true &&
        (m.json as { bootId?: string }).bootId === bootId;
      await watch.waitFor(isOnline, 'the online state');
      const late = await TestClient.connect(live, [], {
        username: 'till-1',
        password: 'till-pw',
        clientId: deviceClientId(NS, 'till-1'),
      });
      await late.publish(stateTopic, JSON.stringify({ online: false, deviceId: 'till-1', bootId }), {
        retain: true,
      });
      await late.close();
      await watch.waitForCount(isOnline, 2, 'the online state published again');
      const last = watch.messages.filter((m) => m.topic === stateTopic).at(-1);
      expect(last?.json).toMatchObject({ online: true, bootId });
    } finally {
      await watch.close();
    }
  });

  it('a controller tries each broker in turn at start, and names every one it could not reach', async () => {
    const controller = new StoreController({
      url: [dead, live],
      username: 'hq',
      password: 'hq-pw',
      ns: NS,
      logger: silent,
      settleMs: 50,
      connectTimeoutMs: 2000,
    });
    controllers.push(controller);
    await controller.start();
    expect(controller.connection).toBe('connected');

    const other = `mqtt://127.0.0.1:${await freePort()}`;
    const failing = new StoreController({ url: `${dead},${other}`, ns: NS, logger: silent });
    const error = await failing.start().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      new RegExp(`^cannot connect to ${dead.replace(/\./g, '\\.')}: .+; ${other.replace(/\./g, '\\.')}: `),
    );
  });
});
