/**
 * Scenario 5's device process (run with --expose-gc): one device with its embedded broker,
 * maxQueue 1000 (the default), retain 128. Every 100 ms it reports `{type: 'sample', heapUsed,
 * rss, queued, created, ended, finishedAt, reconnects}`; on `final`, a reading after gc().
 * Its logger writes nothing but counts messages, so MQTT reconnects are visible.
 * BENCH_HEAP_SNAPSHOT=<file> writes one heap snapshot (live objects only: taking it collects the
 * garbage) the first time heapUsed passes BENCH_HEAP_SNAPSHOT_MIB (default 48) during the floods,
 * to see what the peak is made of (docs/benchmarks.md, finding 3).
 */
import { writeHeapSnapshot } from 'node:v8';
import type { RunningDevice } from '../../cli/device.ts';
import { countingLogger, startBenchDevice } from '../lib/device.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

let device: RunningDevice | undefined;
let sampler: NodeJS.Timeout | undefined;
const logCounts = new Map<string, number>();

workerMain(
  async () => {
    const d = await startBenchDevice(
      { deviceId: 'flood', brokerPort: 0, retain: 128, maxQueue: 1000 },
      countingLogger(logCounts),
    );
    device = d;
    let created = 0;
    let ended = 0;
    let finishedAt = 0;
    const onEnd = (): void => {
      ended += 1;
      finishedAt = performance.timeOrigin + performance.now();
    };
    d.queue.on('queued', () => {
      created += 1;
    });
    d.queue.on('finished', onEnd);
    d.queue.on('failed', onEnd);
    let snapshot = process.env.BENCH_HEAP_SNAPSHOT;
    const snapshotAt = Number(process.env.BENCH_HEAP_SNAPSHOT_MIB ?? 48) * 2 ** 20;
    sampler = setInterval(() => {
      const m = process.memoryUsage();
      if (snapshot && m.heapUsed > snapshotAt) {
        writeHeapSnapshot(snapshot);
        snapshot = undefined;
      }
      sendToParent({
        type: 'sample',
        heapUsed: m.heapUsed,
        rss: m.rss,
        queued: d.queue.queuedCount,
        running: d.queue.runningTask !== undefined,
        created,
        ended,
        finishedAt,
        reconnects: logCounts.get('MQTT connection lost; reconnecting') ?? 0,
      });
    }, 100);
    sendToParent({ type: 'ready', brokerPort: d.brokerPort, httpPort: d.httpPort });
  },
  {
    onMessage: (message) => {
      if (message.type !== 'final' || !device) return;
      (globalThis as { gc?: () => void }).gc?.();
      const m = process.memoryUsage();
      sendToParent({ type: 'final', heapUsed: m.heapUsed, rss: m.rss, queued: device.queue.queuedCount });
    },
    onStop: async () => {
      clearInterval(sampler);
      await device?.stop();
    },
  },
);
