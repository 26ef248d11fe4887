import { describe, expect, it } from 'vitest';
import { deviceClientOptions } from '../../bridge/broker-session.ts';
import { parseBrokerUrls } from '../../bridge/contract/broker-url.ts';
import { mqttLogOption } from '../../bridge/contract/mqtt-log.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { startDeviceOn } from '../support/bridge-device.ts';
import { type DroppingBroker, droppingBrokerPerSuite } from '../support/dropping-broker.ts';
import { memoryLogger } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

describe('mqtt.js log option (docs/benchmarks.md, "Fan-out at scale")', () => {
  it('is a no-op unless DEBUG asks for mqtt.js', () => {
    expect(typeof mqttLogOption({}).log).toBe('function');
    expect(typeof mqttLogOption({ DEBUG: 'express:*' }).log).toBe('function');
    expect(mqttLogOption({ DEBUG: 'mqttjs*' })).toEqual({});
    expect(mqttLogOption({ DEBUG: 'mqttjs:client' })).toEqual({});
    expect(mqttLogOption({ DEBUG: '*' })).toEqual({});
    expect(mqttLogOption({ DEBUG: 'other, *' })).toEqual({});
  });

  it('device clients get it', () => {
    const [endpoint] = parseBrokerUrls('mqtt://127.0.0.1:1883', {});
    const options = deviceClientOptions({
      ns: 'pos',
      deviceId: 'reg1',
      bootId: 'b1',
      protocolVersion: 4,
      endpoint: endpoint!,
    });
    // Whatever DEBUG the suite runs with: the device's options follow mqttLogOption.
    expect(Object.hasOwn(options, 'log')).toBe(Object.hasOwn(mqttLogOption(), 'log'));
  });
});

/**
 * One line per MQTT client error, warn for the first of a connection's outage and debug for its
 * repeats (logClientErrors in bridge/contract/mqtt-log.ts): a broker that refuses for minutes
 * would otherwise log a warning at every reconnect attempt. Devices and controllers alike.
 */
describe('MQTT client errors in the log', () => {
  let broker: DroppingBroker;
  const cleanups = droppingBrokerPerSuite((started) => {
    broker = started;
  });
  // The lost connection may first end in an ECONNRESET (a warning of its own): the refusals follow.
  const errors = (lines: Array<Record<string, unknown>>) =>
    lines.filter((l) => l.msg === 'MQTT error' && l.code === 3).map((l) => [l.level, l.err, l.url]);
  const WARN = 40;
  const DEBUG = 20;

  async function outages(client: { connected: () => boolean }, lines: Array<Record<string, unknown>>) {
    broker.unavailable = true;
    broker.closeAll();
    await until(() => errors(lines).length >= 3, 'three refused reconnects', 15_000);
    const refused = [WARN, 'Connection refused: Server unavailable', broker.url];
    const repeated = [DEBUG, 'Connection refused: Server unavailable', broker.url];
    expect(errors(lines).slice(0, 3)).toEqual([refused, repeated, repeated]);
    // Connected again: the next outage's first error is a warning again.
    broker.unavailable = false;
    await until(client.connected, 'connected again', 15_000);
    const before = errors(lines).length;
    broker.unavailable = true;
    broker.closeAll();
    await until(() => errors(lines).length > before, 'a refused reconnect after the next loss', 15_000);
    expect(errors(lines)[before]).toEqual(refused);
    broker.unavailable = false;
  }

  it('a device warns once per outage and logs the repeats at debug', async () => {
    broker.dropping = false;
    const { logger, lines } = memoryLogger('debug');
    const device = await startDeviceOn(broker.url, logger, {
      ns: 'errlog',
      idPrefix: 'errlog',
      mqttReconnectMax: '1s',
    });
    cleanups.push(() => device.stop());
    await outages({ connected: () => device.bridge?.health().state === 'connected' }, lines);
  });

  it('a store controller does the same, and keeps reconnecting through CONNACK refusals', async () => {
    broker.dropping = false;
    const { logger, lines } = memoryLogger('debug');
    const controller = new StoreController({ url: broker.url, ns: 'errlog', logger, reconnectMaxMs: 1000 });
    await controller.start();
    cleanups.push(() => controller.stop());
    await outages({ connected: () => controller.connection === 'connected' }, lines);
  });

  it('a store controller whose first connection is refused fails at once, naming the refusal', async () => {
    broker.dropping = false;
    broker.unavailable = true;
    const controller = new StoreController({
      url: broker.url,
      ns: 'errlog',
      logger: memoryLogger('debug').logger,
    });
    cleanups.push(() => controller.stop());
    await expect(controller.start()).rejects.toThrow(
      `cannot connect to ${broker.url}: Connection refused: Server unavailable`,
    );
  });
});
