/**
 * Devices for the bridge suites: a whole device (REST app, queue, simulator, MQTT bridge)
 * started with `startDevice` against a test broker, plus the few REST calls the suites make (auth
 * off: these suites are about MQTT; the REST suites pin authentication), or a bare DeviceBridge
 * on a queue for the options `startDevice` does not expose.
 */
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { DeviceBridge, type DeviceBridgeOptions } from '../../bridge/device-bridge.ts';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig, type ServeConfigInput } from '../../cli/serve-config.ts';
import { SimulatorExecutor } from '../../src/executors/simulator.ts';
import type { Logger } from '../../src/logger.ts';
import type { TaskBody } from '../../src/tasks/task.ts';
import { TaskQueue } from '../../src/tasks/task-queue.ts';
import { VERSION } from '../../src/version.ts';
import type { RunningBroker } from './brokers.ts';
import { silent } from './loggers.ts';

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

/**
 * A whole device on `mqttUrl` (no credentials, MQTT 3.1.1, auth off) logging to `logger`, with
 * `--mqtt-reconnect-max` set: the suites that read what a device logs while its broker is away.
 */
export function startDeviceOn(
  mqttUrl: string,
  logger: Logger,
  options: { ns: string; idPrefix: string; mqttReconnectMax: string },
): Promise<RunningDevice> {
  const config = parseServeConfig({
    port: 0,
    host: '127.0.0.1',
    auth: 'off',
    deviceId: uniqueId(options.idPrefix),
    ns: options.ns,
    mqttUrl,
    mqttProtocol: '3.1.1',
    mqttReconnectMax: options.mqttReconnectMax,
  });
  return startDevice(config, { logger });
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
    // auto would first try MQTT 5 on 3.1.1-only brokers and fall back after one reconnect period
    // (test/bridge/mqtt-protocol.test.ts covers that); the suites need not pay it for every device.
    mqttProtocol: broker.mqtt5 ? 'auto' : '3.1.1',
    ...rest,
  });
  const device = await startDevice(config, {
    logger: silent,
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

export interface DirectBridge {
  bridge: DeviceBridge;
  queue: TaskQueue;
  registry: Registry;
  /** Stops the queue (its running task ends FAILURE and is mirrored), then the bridge. */
  stop(): Promise<void>;
}

/**
 * A DeviceBridge on its own TaskQueue (simulator), without the REST app: for the options
 * `startDevice` does not expose (MQTT 5, reconnect period, credentials); the queue's options
 * (retention, queue bound, requestId memory) are the second argument.
 * The queue is started; the bridge is not.
 */
export function directBridge(
  options: Pick<DeviceBridgeOptions, 'url' | 'ns' | 'deviceId'> & Partial<DeviceBridgeOptions>,
  queueOptions: { retain?: number; maxQueue?: number; requestIdMemory?: number } = {},
): DirectBridge {
  const queue = new TaskQueue({
    executor: new SimulatorExecutor({}),
    retain: queueOptions.retain ?? 8,
    maxQueue: queueOptions.maxQueue ?? 8,
    maxScriptBytes: 4096,
    ...(queueOptions.requestIdMemory !== undefined && { requestIdMemory: queueOptions.requestIdMemory }),
  });
  const registry = new Registry();
  // Built before the queue starts: a bridge its constructor refuses leaves nothing running.
  const bridge = new DeviceBridge({
    groups: [],
    installation: 'pos',
    version: VERSION,
    queue,
    registry,
    logger: silent,
    ...options,
  });
  queue.start();
  return {
    bridge,
    queue,
    registry,
    async stop() {
      await queue.stop();
      await bridge.stop();
    },
  };
}
