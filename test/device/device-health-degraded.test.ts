/**
 * A device cut off from its broker: /health answers 503 `"status": "degraded"` once the broker has
 * been out of reach for `--health-mqtt-grace`, so the image's HEALTHCHECK (which wants a 2xx) and
 * compose see it; 200 ok while connected or within the grace. A real device and a real store broker.
 */
import { describe, expect, it } from 'vitest';
import { startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { brokersByName } from '../support/brokers.ts';
import { withCreds } from '../support/controller-env.ts';
import { silent } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

interface Health {
  status: string;
  mqtt: { state: string; offlineMs?: number };
}

async function health(port: number): Promise<{ code: number; body: Health }> {
  const response = await fetch(`http://127.0.0.1:${port}/health`);
  return { code: response.status, body: (await response.json()) as Health };
}

describe('device /health without its broker', () => {
  it('is 503 degraded past --health-mqtt-grace, 200 ok while connected or within it', async () => {
    const ns = 'healthns';
    const broker = await brokersByName.embedded.start(ns);
    const config = (deviceId: string, grace: string) =>
      parseServeConfig({
        port: 0,
        host: '127.0.0.1',
        deviceId,
        mqttUrl: withCreds(broker.url, broker.deviceCreds(deviceId)),
        mqttProtocol: '3.1.1',
        mqttReconnectMax: '0',
        ns,
        users: ['admin:pw'],
        healthMqttGrace: grace,
      });
    expect(parseServeConfig({ deviceId: 'x', mqtt: false, auth: 'off' }).healthMqttGrace).toBe(60_000);
    const patient = await startDevice(config('reg1', '1h'), { logger: silent });
    const strict = await startDevice(config('reg2', '0'), { logger: silent });
    try {
      for (const device of [patient, strict]) {
        const ok = await health(device.httpPort);
        expect([ok.code, ok.body.status, ok.body.mqtt.state]).toEqual([200, 'ok', 'connected']);
        expect(ok.body.mqtt.offlineMs).toBeUndefined();
      }
      await broker.stop();
      await until(() => strict.bridge!.health().state === 'reconnecting', 'connection lost');
      const cut = await health(strict.httpPort);
      expect([cut.code, cut.body.status]).toEqual([503, 'degraded']);
      expect(cut.body.mqtt.offlineMs).toEqual(expect.any(Number));
      await until(() => patient.bridge!.health().state === 'reconnecting', 'connection lost');
      const young = await health(patient.httpPort);
      expect([young.code, young.body.status, young.body.mqtt.state]).toEqual([200, 'ok', 'reconnecting']);
    } finally {
      await Promise.allSettled([patient.stop(), strict.stop()]);
      await broker.stop().catch(() => undefined);
    }
  });
});
