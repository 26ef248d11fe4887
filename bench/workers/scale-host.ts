/**
 * Hosts many registers in one process for the scale scenarios (fanout-scale, status-under-load).
 * argv: `<full|light> <from> <to> <brokerHost> <brokerPort> <anonymous|users> [stamp]`.
 * - `full`: complete devices through cli/device.ts (task queue, simulator, REST on a free port,
 *   MQTT bridge), as `regbridge serve --mqtt-url` runs them.
 * - `light`: the task queue, the simulator and the MQTT bridge only (no REST app), so 10,000
 *   registers fit in a few processes; the MQTT path is the same code as a full device's.
 * - `stamp`: every task end (the queue's `finished` event, listener put first, as
 *   status-latency.ts does) is stamped with lib/scenario.ts's nowMs() and sent on an `ends`
 *   message as `[deviceId, taskId, t]` triples; `ping` messages are answered with `pong` for the
 *   clock offset (lib/clock.ts).
 * Sends `{type: 'ready', devices: [{deviceId, httpPort}], startupMs, rss, heapUsed}` once every
 * register has started.
 */
import { Registry } from 'prom-client';
import { DeviceBridge } from '../../bridge/device-bridge.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { createExecutor } from '../../src/executors/index.ts';
import { TaskQueue } from '../../src/tasks/task-queue.ts';
import { VERSION } from '../../src/version.ts';
import { silent as silentLogger } from '../../test/support/loggers.ts';
import { BENCH_PASSWORD, BENCH_USER, startBenchDevice } from '../lib/device.ts';
import { DEVICE_PASSWORD, deviceId, NS, urlWithCredentials } from '../lib/fleet.ts';
import { nowMs } from '../lib/scenario.ts';
import { startWindowProfile, stopWindowProfile } from '../lib/window-profile.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [mode = 'full', from = '0', to = '0', host = '127.0.0.1', port = '1883', auth = 'users', stamp] =
  process.argv.slice(2);

interface Hosted {
  deviceId: string;
  httpPort: number;
  queue: TaskQueue;
  stop(): Promise<void>;
}

const hosted: Hosted[] = [];
let ends: Array<[string, number, number]> = [];
/** One registry for the process: the bridge's counters are shared (bridge/bridge-metrics.ts). */
const registry = new Registry();
// The variable `serve` reads, so a run can compare the reconnect backoff with the fixed 1 s (0):
// light and full registers both take it.
const reconnectMax = process.env.REGBRIDGE_MQTT_RECONNECT_MAX;
const reconnectFlag = reconnectMax === undefined ? {} : { mqttReconnectMax: reconnectMax };
const template = parseServeConfig({
  port: 0,
  host: '127.0.0.1',
  users: [`${BENCH_USER}:${BENCH_PASSWORD}`],
  logLevel: 'silent',
  deviceId: 'template',
  mqttUrl: `mqtt://${host}:${port}`,
  ns: NS,
  ...reconnectFlag,
});

function urlOf(id: string): string {
  return auth === 'anonymous'
    ? `mqtt://${host}:${port}`
    : urlWithCredentials(host, Number(port), id, DEVICE_PASSWORD);
}

async function startFull(id: string): Promise<Hosted> {
  const device: RunningDevice = await startBenchDevice({
    deviceId: id,
    mqttUrl: urlOf(id),
    ns: NS,
    ...reconnectFlag,
  });
  return { deviceId: id, httpPort: device.httpPort, queue: device.queue, stop: () => device.stop() };
}

async function startLight(id: string): Promise<Hosted> {
  const queue = new TaskQueue({
    executor: createExecutor(template, { logger: silentLogger }),
    retain: template.retain,
    maxQueue: template.maxQueue,
    maxScriptBytes: template.maxScriptBytes,
    requestIdMemory: template.requestIdMemory,
  });
  queue.start();
  const bridge = new DeviceBridge({
    url: urlOf(id),
    ns: NS,
    deviceId: id,
    groups: [],
    installation: template.installation,
    version: VERSION,
    queue,
    registry,
    logger: silentLogger,
    protocolVersion: 4,
    maxStatusesInFlight: template.mqttMaxInflight,
    reconnectMaxMs: template.mqttReconnectMax,
    // start() resolves once the script subscriptions are acknowledged, however long a broker
    // busy with thousands of sessions takes (nats-server): ready then means able to receive.
    startTimeoutMs: 600_000,
  });
  try {
    await bridge.start();
  } catch (error) {
    await queue.stop();
    throw error;
  }
  return {
    deviceId: id,
    httpPort: 0,
    queue,
    stop: async () => {
      await queue.stop();
      await bridge.stop();
    },
  };
}

workerMain(
  async () => {
    const started = performance.now();
    const batch = mode === 'light' ? 100 : 25;
    const start = mode === 'light' ? startLight : startFull;
    for (let i = Number(from); i < Number(to); i += batch) {
      const ids: string[] = [];
      for (let j = i; j < Math.min(Number(to), i + batch); j += 1) ids.push(deviceId(j));
      hosted.push(...(await Promise.all(ids.map(start))));
    }
    if (stamp === 'stamp') {
      for (const register of hosted) {
        const id = register.deviceId;
        register.queue.prependListener('finished', (task: { id: number }) => {
          ends.push([id, task.id, nowMs()]);
        });
      }
    }
    const memory = process.memoryUsage();
    sendToParent({
      type: 'ready',
      devices: hosted.map((d) => ({ deviceId: d.deviceId, httpPort: d.httpPort })),
      startupMs: performance.now() - started,
      rss: memory.rss,
      heapUsed: memory.heapUsed,
    });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'ping') sendToParent({ type: 'pong', t0: message.t0, t1: nowMs() });
      else if (message.type === 'profile-start')
        await startWindowProfile().then(() => sendToParent({ type: 'profiling' }));
      else if (message.type === 'profile-stop')
        await stopWindowProfile(String(message.file)).then(() => sendToParent({ type: 'profiled' }));
      else if (message.type === 'ends') {
        sendToParent({ type: 'ends', ends });
        ends = [];
      } else if (message.type === 'usage') {
        sendToParent({ type: 'usage', rss: process.memoryUsage.rss(), cpu: process.cpuUsage() });
      }
    },
    onStop: async () => {
      await Promise.all(hosted.map((d) => d.stop()));
    },
  },
);
