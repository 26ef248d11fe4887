/**
 * Scenario 1's servers, one per process (so one server's heap and garbage collection never
 * weigh on another's figures): `bare` (bench/lib/bare.ts), `device` (auth on, simulator, maxQueue
 * 10,000,000, retain 128: every request creates a task, executed meanwhile) or `paused` (the same
 * device, its queue stopped: the submission path alone). Reports `ready` with its port and a
 * bearer token; on `stats`, its own CPU time (user + system, µs) and the queue's counters; on
 * `drain`, waits for the queue to empty.
 */
import type { RunningDevice } from '../../cli/device.ts';
import { startBareApp } from '../lib/bare.ts';
import { fetchToken, startBenchDevice } from '../lib/device.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const kind = process.argv[2] as 'bare' | 'device' | 'paused';
let close: (() => Promise<void>) | undefined;
let device: RunningDevice | undefined;

workerMain(
  async () => {
    if (kind === 'bare') {
      const { app, port } = await startBareApp();
      close = () => app.close();
      sendToParent({ type: 'ready', port, token: '' });
      return;
    }
    const d = await startBenchDevice({ deviceId: kind, mqtt: false, retain: 128, maxQueue: 10_000_000 });
    device = d;
    close = () => d.stop();
    if (kind === 'paused') await d.queue.stop();
    sendToParent({ type: 'ready', port: d.httpPort, token: await fetchToken(d.httpPort) });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'stats') {
        const cpu = process.cpuUsage();
        sendToParent({
          type: 'stats',
          cpuUs: cpu.user + cpu.system,
          created: device?.queue.lastIssuedId ?? 0,
          queued: device?.queue.queuedCount ?? 0,
          heapUsed: process.memoryUsage().heapUsed,
        });
      } else if (message.type === 'drain') {
        const queue = device?.queue;
        const deadline = Date.now() + 60_000;
        while (queue && (queue.queuedCount > 0 || queue.runningTask !== undefined) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        sendToParent({ type: 'drained', queued: queue?.queuedCount ?? 0 });
      }
    },
    onStop: async () => {
      await close?.();
    },
  },
);
