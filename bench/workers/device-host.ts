/**
 * Hosts many registers in one process for the fan-out scenarios: full devices (task queue,
 * simulator, REST on a free port, MQTT bridge) started through cli/device.ts.
 * argv: `<from> <to> <brokerHost> <brokerPort> [anonymous]`, or `<from> <to> <mqtt URL list>` (an
 * anonymous broker list, MQTT 3.1.1: the NATS cluster scenario). Devices are started a batch at a
 * time; then `{type: 'ready', devices: [{deviceId, httpPort}], startupMs, rss, heapUsed}`.
 */
import type { RunningDevice } from '../../cli/device.ts';
import { startBenchDevice } from '../lib/device.ts';
import { DEVICE_PASSWORD, deviceId, NS, urlWithCredentials } from '../lib/fleet.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [from = '0', to = '0', host = '127.0.0.1', port = '1883', anonymous] = process.argv.slice(2);
const devices: RunningDevice[] = [];
const BATCH = 25;

workerMain(
  async () => {
    const started = performance.now();
    for (let i = Number(from); i < Number(to); i += BATCH) {
      const batch: Promise<RunningDevice>[] = [];
      for (let j = i; j < Math.min(Number(to), i + BATCH); j += 1) {
        const id = deviceId(j);
        if (host.startsWith('mqtt://')) {
          batch.push(startBenchDevice({ deviceId: id, mqttUrl: host, ns: NS, mqttProtocol: '3.1.1' }));
          continue;
        }
        const mqttUrl =
          anonymous === 'anonymous'
            ? `mqtt://${host}:${port}`
            : urlWithCredentials(host, Number(port), id, DEVICE_PASSWORD);
        batch.push(startBenchDevice({ deviceId: id, mqttUrl, ns: NS }));
      }
      devices.push(...(await Promise.all(batch)));
    }
    const memory = process.memoryUsage();
    sendToParent({
      type: 'ready',
      devices: devices.map((d) => ({ deviceId: d.config.deviceId, httpPort: d.httpPort })),
      startupMs: performance.now() - started,
      rss: memory.rss,
      heapUsed: memory.heapUsed,
    });
  },
  {
    onStop: async () => {
      await Promise.all(devices.map((d) => d.stop()));
    },
  },
);
