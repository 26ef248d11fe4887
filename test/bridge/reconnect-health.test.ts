/**
 * The reconnect backoff as users see it: `GET /health` of a device (`regbridge serve`) and of the
 * controller service shows the reconnect attempt awaited while their broker is away (docs/api.md
 * "Health", docs/controller.md), and `--mqtt-reconnect-max` reaches the client it caps. Against an
 * in-process broker that drops every connection (test/support/dropping-broker.ts); the waits are
 * read from the debug log, not from the clock.
 */
import { describe, expect, it } from 'vitest';
import { startControllerService } from '../../cli/controller-service.ts';
import { startDeviceOn } from '../support/bridge-device.ts';
import { api } from '../support/controller-service.ts';
import { type DroppingBroker, droppingBrokerPerSuite } from '../support/dropping-broker.ts';
import { memoryLogger } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

const scheduledWaits = (lines: Array<Record<string, unknown>>): number[] =>
  lines.filter((l) => l.msg === 'MQTT reconnect scheduled').map((l) => l.delayMs as number);

describe('/health while the broker is away', () => {
  let broker: DroppingBroker;
  const cleanups = droppingBrokerPerSuite((started) => {
    broker = started;
  });

  it('a device shows the attempt awaited, with waits capped by --mqtt-reconnect-max', async () => {
    broker.dropping = false;
    const { logger, lines } = memoryLogger('debug');
    const device = await startDeviceOn(broker.url, logger, {
      ns: 'backoff',
      idPrefix: 'health',
      mqttReconnectMax: '1s',
    });
    cleanups.push(() => device.stop());
    const connected = await device.app.inject({ method: 'GET', url: '/health' });
    expect(connected.json().mqtt.state).toBe('connected');
    expect(connected.json().mqtt).not.toHaveProperty('reconnect');

    broker.dropAll();
    // With the default 30 s cap the second wait would be 1-2 s and the third 2-4 s.
    await until(() => scheduledWaits(lines).length >= 3, 'three scheduled reconnects', 15_000);
    for (const wait of scheduledWaits(lines)) expect(wait).toBeLessThan(1000);
    const away = (await device.app.inject({ method: 'GET', url: '/health' })).json();
    expect(away.status).toBe('ok');
    expect(away.mqtt.reconnect.attempt).toBeGreaterThanOrEqual(3);
    expect(away.mqtt.reconnect.inMs).toBeGreaterThanOrEqual(0);
    expect(away.mqtt.reconnect.inMs).toBeLessThan(1000);

    broker.dropping = false;
    await until(async () => {
      const back = (await device.app.inject({ method: 'GET', url: '/health' })).json();
      return back.mqtt.state === 'connected' && back.mqtt.reconnect === undefined;
    }, 'the device connected again, without a reconnect field');
  });

  it('the controller service shows it too, with waits capped by its --mqtt-reconnect-max', async () => {
    broker.dropping = false;
    const { logger, lines } = memoryLogger('debug');
    const service = await startControllerService(
      {
        port: 0,
        host: '127.0.0.1',
        mqttUrl: broker.url,
        mqttReconnectMax: 1000,
        brokerHost: '127.0.0.1',
        brokerUsers: [],
        ns: 'backoff',
        users: [{ name: 'admin', password: 'admin-pw' }],
        db: ':memory:',
        tokenTtl: 3600,
        settleMs: 50,
      },
      { logger },
    );
    cleanups.push(() => service.stop());
    const connected = await api(service.app, undefined, 'GET', '/health');
    expect(connected.body.mqtt).toEqual({ state: 'connected' });

    broker.dropAll();
    // The controller's default cap is 10 s: its third wait would be 2-4 s.
    await until(() => scheduledWaits(lines).length >= 3, 'three scheduled reconnects', 15_000);
    for (const wait of scheduledWaits(lines)) expect(wait).toBeLessThan(1000);
    const away = await api(service.app, undefined, 'GET', '/health');
    expect(away.statusCode).toBe(200);
    expect(away.body.mqtt.state).not.toBe('connected');
    expect(away.body.mqtt.reconnect.attempt).toBeGreaterThanOrEqual(3);
    expect(away.body.mqtt.reconnect.inMs).toBeLessThan(1000);

    broker.dropping = false;
    await until(async () => {
      const back = await api(service.app, undefined, 'GET', '/health');
      return back.body.mqtt.state === 'connected' && back.body.mqtt.reconnect === undefined;
    }, 'the controller connected again, without a reconnect field');
  });
});
