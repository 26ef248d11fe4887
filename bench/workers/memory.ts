/**
 * Scenario 4's measuring process (run with --expose-gc): one device with MQTT on (embedded
 * broker, retain 128, maxQueue 1000) is fed `PRINT x` scripts over MQTT QoS 1 by a controller
 * client, a window at a time so the queue never refuses. At each milestone (argv: task counts)
 * the queue is drained, gc() runs twice, and heap, RSS and the broker's retained topics are
 * reported: `{type: 'milestone', tasks, heapUsed, rss, retained, elapsedMs}`.
 */
import { connect } from 'mqtt';
import type { RunningDevice } from '../../cli/device.ts';
import { until } from '../../test/support/waits.ts';
import { BENCH_PASSWORD, BENCH_USER, countingLogger, startBenchDevice } from '../lib/device.ts';
import { awaitStatusOnBroker, countRetained } from '../lib/retained.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const milestones = process.argv.slice(2).map(Number);
const WINDOW = 500;
let device: RunningDevice | undefined;
const logCounts = new Map<string, number>();

function collect(): NodeJS.MemoryUsage {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage();
}

workerMain(
  async () => {
    const d = await startBenchDevice(
      { deviceId: 'mem', brokerPort: 0, retain: 128, maxQueue: 1000 },
      countingLogger(logCounts),
    );
    device = d;
    const url = `mqtt://127.0.0.1:${d.brokerPort}`;
    const feeder = connect(url, {
      username: BENCH_USER,
      password: BENCH_PASSWORD,
      protocolVersion: 4,
      clean: true,
      reconnectPeriod: 0,
      clientId: 'bench-memory-feeder',
    });
    await new Promise<void>((resolve, reject) => {
      feeder.once('connect', () => resolve());
      feeder.once('error', reject);
    });
    let ended = 0;
    let refused = 0;
    let peakPending = 0;
    let peakHeap = 0;
    d.queue.on('finished', () => {
      ended += 1;
    });
    d.queue.on('failed', () => {
      ended += 1;
      refused += 1;
    });
    const baseline = collect();
    sendToParent({
      type: 'milestone',
      tasks: 0,
      heapUsed: baseline.heapUsed,
      rss: baseline.rss,
      retained: 0,
      elapsedMs: 0,
    });
    const started = performance.now();
    let sent = 0;
    for (const target of milestones) {
      while (sent < target) {
        const batch = Math.min(WINDOW, target - sent);
        const publishes: Promise<unknown>[] = [];
        for (let i = 0; i < batch; i += 1) {
          sent += 1;
          const payload = JSON.stringify({ script: 'PRINT x', requestId: `m${sent}` });
          publishes.push(feeder.publishAsync('pos/devices/mem/scripts', payload, { qos: 1 }));
        }
        await Promise.all(publishes);
        // Keep at most one window queued: the queue (maxQueue 1000) must never refuse here.
        const ceiling = sent - WINDOW;
        await until(() => ended >= ceiling, 'the device to catch up', 60_000, 1);
        const pending = d.bridge?.health().pending ?? 0;
        if (pending > peakPending) peakPending = pending;
        const heap = process.memoryUsage().heapUsed;
        if (heap > peakHeap) peakHeap = heap;
      }
      await until(() => ended >= sent, 'the device to drain', 60_000, 5);
      // Statuses and clears may still be on their way to the broker (up to 1,000 in flight,
      // the rest coalesced: docs/mqtt.md, "Backpressure"). Two sentinel tasks are a barrier (a client's QoS 1 messages
      // arrive in order): once the second one's FINISHED is on the broker, all before it is too.
      for (let k = 0; k < 2; k += 1) {
        const { task } = d.queue.submit('PRINT sentinel', { source: 'rest' });
        await d.queue.waitForEnd(task.id, 60_000);
        await awaitStatusOnBroker({
          url,
          username: BENCH_USER,
          password: BENCH_PASSWORD,
          topic: `pos/devices/mem/tasks/${task.id}/status`,
          status: 'FINISHED',
          timeoutMs: 180_000,
        });
      }
      const memory = collect();
      const retained = await countRetained({
        url,
        username: BENCH_USER,
        password: BENCH_PASSWORD,
        filter: 'pos/#',
      });
      sendToParent({
        type: 'milestone',
        tasks: sent,
        ended,
        failed: refused,
        heapUsed: memory.heapUsed,
        rss: memory.rss,
        retained: retained.total,
        retainedByKind: retained.byKind,
        held: d.queue.heldCount,
        peakPending,
        peakHeap,
        reconnects: logCounts.get('MQTT connection lost; reconnecting') ?? 0,
        brokerClientErrors: logCounts.get('client error') ?? 0,
        elapsedMs: performance.now() - started,
      });
    }
    await feeder.endAsync();
    sendToParent({ type: 'done' });
  },
  { onStop: () => device?.stop() },
);
