/**
 * A register on regbridge's own store broker with `--mqtt-protocol auto` (the default for an
 * external broker): the broker's CONNACK 1 to the MQTT 5 attempt is the expected answer, logged
 * at debug, not a WARN, and 3.1.1 is tried at once, not after the reconnect wait.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directBridge } from '../support/bridge-device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { memoryLogger } from '../support/loggers.ts';

const ns = 'protostore';
let broker: RunningBroker;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
});
afterAll(async () => {
  await broker?.stop();
});

describe('MQTT 5 attempt on the store broker', () => {
  it('falls back to 3.1.1 quietly (no warning) and without waiting the reconnect period', async () => {
    const { logger, lines } = memoryLogger('debug');
    const creds = broker.deviceCreds('reg1');
    // A first reconnect wait far beyond the start time-out: start() resolves only if the 3.1.1
    // attempt does not wait for it.
    const device = directBridge({
      url: broker.url,
      ns,
      deviceId: 'reg1',
      ...(creds.username !== undefined && { username: creds.username, password: creds.password! }),
      protocolVersion: 'auto',
      reconnectPeriodMs: 60_000,
      reconnectMaxMs: 60_000,
      startTimeoutMs: 10_000,
      logger,
    });
    try {
      await device.bridge.start();
      expect(device.bridge.health()).toMatchObject({ state: 'connected', protocol: '3.1.1' });
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 20,
          err: 'Connection refused: Unacceptable protocol version',
          code: 1,
        }),
      );
      expect(lines).toContainEqual(
        expect.objectContaining({ msg: 'the broker does not accept MQTT 5; using MQTT 3.1.1' }),
      );
    } finally {
      await device.stop();
    }
  });
});
