/**
 * Scenario 5's device process (run with --expose-gc): one device with its embedded broker,
 * maxQueue 1000 (the default), retain 128. Every 100 ms it reports `{type: 'sample', heapUsed,
 * cpuUs, rss, queued, created, ended, finishedAt, reconnects}` (cpuUs: the process' CPU time, all
 * its threads, so V8's concurrent marking too); on `final`, a reading after gc().
 * Its logger writes nothing but counts messages, so MQTT reconnects are visible.
 * BENCH_HEAP_SNAPSHOT=<file> writes one heap snapshot (live objects only: taking it collects the
 * garbage) the first time heapUsed passes BENCH_HEAP_SNAPSHOT_MIB (default 48) during the floods,
 * to see what the peak is made of.
 * BENCH_FLOOD_DETAIL=1 probes the queues between the flooder and the task queue every 10 ms
 * (lib/flood-probe.ts) and answers each `flood-end` with their peaks during the flood.
 * BENCH_HEAP_PROF_DIR=<dir> runs V8's sampling heap profiler during each flood, objects collected
 * since included (so it shows what was allocated, not only what is live), and writes
 * `<dir>/<flood>.heapprofile` at its end (read it with bench/heap-profile-top.ts);
 * with BENCH_HEAP_PROF_PROMOTED=1 only what survived the scavenges (what was promoted).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import type { RunningDevice } from '../../cli/device.ts';
import { countingLogger, startBenchDevice } from '../lib/device.ts';
import { captureAedes, PeakCounts, probe } from '../lib/flood-probe.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

let device: RunningDevice | undefined;
let sampler: NodeJS.Timeout | undefined;
let prober: NodeJS.Timeout | undefined;
const logCounts = new Map<string, number>();
const detail = process.env.BENCH_FLOOD_DETAIL === '1';
const heapProfDir = process.env.BENCH_HEAP_PROF_DIR;
const peaks = new PeakCounts();
let session: Session | undefined;
let phase = '';

async function floodStart(label: string): Promise<void> {
  phase = label;
  peaks.take();
  if (!heapProfDir) return;
  session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 32 * 1024,
    includeObjectsCollectedByMajorGC: true,
    // BENCH_HEAP_PROF_PROMOTED=1 leaves out what scavenges collected: what is left was promoted
    // to the old generation (or is still alive), i.e. what makes the old generation grow.
    includeObjectsCollectedByMinorGC: process.env.BENCH_HEAP_PROF_PROMOTED !== '1',
  } as never);
}

async function floodEnd(): Promise<void> {
  sendToParent({ type: 'flood-detail', phase, peaks: peaks.take() });
  if (!session) return;
  const { profile } = await session.post('HeapProfiler.stopSampling');
  writeFileSync(join(heapProfDir!, `${phase.replace(/\W+/g, '-')}.heapprofile`), JSON.stringify(profile));
  session.disconnect();
  session = undefined;
}

if (detail) captureAedes();

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
      const cpu = process.cpuUsage();
      sendToParent({
        type: 'sample',
        heapUsed: m.heapUsed,
        cpuUs: cpu.user + cpu.system,
        rss: m.rss,
        queued: d.queue.queuedCount,
        running: d.queue.runningTask !== undefined,
        created,
        ended,
        finishedAt,
        reconnects: logCounts.get('MQTT connection lost; reconnecting') ?? 0,
      });
    }, 100);
    if (detail) prober = setInterval(() => peaks.note(probe(d)), 10);
    sendToParent({ type: 'ready', brokerPort: d.brokerPort, httpPort: d.httpPort });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'flood-start') await floodStart(String(message.label));
      if (message.type === 'flood-end') await floodEnd();
      if (message.type !== 'final' || !device) return;
      (globalThis as { gc?: () => void }).gc?.();
      const m = process.memoryUsage();
      sendToParent({ type: 'final', heapUsed: m.heapUsed, rss: m.rss, queued: device.queue.queuedCount });
    },
    onStop: async () => {
      clearInterval(sampler);
      clearInterval(prober);
      await device?.stop();
    },
  },
);
