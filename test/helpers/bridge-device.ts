/**
 * A whole device (REST app, queue, simulator, MQTT bridge) started with `startDevice` against a
 * test broker, plus the few REST calls the bridge suites make. Auth is off: these suites are
 * about MQTT; the REST suites pin authentication.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { parseServeConfig, type ServeConfigInput } from '../../src/config.ts';
import { type RunningDevice, startDevice } from '../../src/device.ts';
import type { TaskBody } from '../../src/tasks/task.ts';
import type { RunningBroker } from './brokers.ts';

export interface TestDevice {
  deviceId: string;
  device: RunningDevice;
  baseUrl: string;
  submit(script: string): Promise<{ id: number; status: string }>;
  task(id: number, waitMs?: number): Promise<TaskBody>;
  stop(): Promise<void>;
}

export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** The broker URL with the device's credentials in it, as `--mqtt-url` accepts them. */
export function deviceUrl(broker: RunningBroker, deviceId: string): string {
  const { username, password } = broker.deviceCreds(deviceId);
  if (username === undefined) return broker.url;
  const url = new URL(broker.url);
  url.username = encodeURIComponent(username);
  url.password = encodeURIComponent(password ?? '');
  return url.toString();
}

export async function startTestDevice(
  broker: RunningBroker,
  options: { ns: string; deviceId?: string } & Partial<ServeConfigInput>,
): Promise<TestDevice> {
  const { ns, deviceId = uniqueId('dev'), ...rest } = options;
  const config = parseServeConfig({
    port: 0,
    host: '127.0.0.1',
    auth: 'off',
    deviceId,
    ns,
    mqttUrl: deviceUrl(broker, deviceId),
    logLevel: 'silent',
    ...rest,
  });
  const device = await startDevice(config, {
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  });
  const baseUrl = `http://127.0.0.1:${device.httpPort}`;
  return {
    deviceId,
    device,
    baseUrl,
    async submit(script) {
      const response = await fetch(`${baseUrl}/api/vendor-script`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ vendorScript: script }),
      });
      if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
      return (await response.json()) as { id: number; status: string };
    },
    async task(id, waitMs = 0) {
      const response = await fetch(`${baseUrl}/api/tasks/${id}?waitMs=${waitMs}`);
      if (response.status !== 200) throw new Error(`task ${id}: ${response.status} ${await response.text()}`);
      return (await response.json()) as TaskBody;
    },
    stop: () => device.stop(),
  };
}
