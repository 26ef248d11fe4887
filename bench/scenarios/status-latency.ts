/**
 * Scenario 2: time from a task's end to its FINISHED status reaching a client in another
 * process: (a) an MQTT subscriber through the device's embedded aedes, (b) the same through a
 * local mosquitto, (c) a REST long poll (`waitMs`), (d) REST pollers at 100 ms and 1 s (the vendor
 * flow). The end is stamped by a listener put first on the queue's `finished` event; the client
 * stamps when it has the status. Both stamps are performance.timeOrigin + performance.now(),
 * corrected by the offset between the two processes' clocks measured over IPC (lib/clock.ts).
 */

import type { RunningDevice } from '../../cli/device.ts';
import { measureOffset } from '../lib/clock.ts';
import { BENCH_PASSWORD, BENCH_USER, startBenchDevice } from '../lib/device.ts';
import { Latencies, type LatencySummary } from '../lib/hist.ts';
import { startBenchMosquitto } from '../lib/mosquitto.ts';
import { startWorker, type Worker, type WorkerMessage } from '../lib/proc.ts';
import { nowMs, round, runScenario, type ScenarioContext, sleep } from '../lib/scenario.ts';

interface Seen extends WorkerMessage {
  id: number;
  t: number;
}

/** The script every sample runs: long enough for a long poll to be waiting before the end. */
const SCRIPT = 'SLEEP 10\nPRINT x';

interface Phase {
  label: string;
  device: RunningDevice;
  observerArgs: string[];
  samples: number;
  /** Open loop: a new task every `gapMs` without waiting (pollers); closed loop otherwise. */
  gapMs?: number;
  /** Tell the observer each id (REST); MQTT observers see everything anyway. */
  watch: boolean;
  timeoutMs: number;
}

async function runPhase(ctx: ScenarioContext, phase: Phase): Promise<LatencySummary & { offset: number }> {
  const ends = new Map<number, number>();
  const onEnd = (task: { id: number }): void => {
    ends.set(task.id, nowMs());
  };
  // First listener, so the bridge's own work on the event is inside the measured time.
  phase.device.queue.prependListener('finished', onEnd);
  const observer: Worker = startWorker('bench/workers/status-observer.ts', phase.observerArgs);
  const measured = new Latencies();
  try {
    await observer.next('ready', 20_000);
    const clock = await measureOffset(observer);
    const pending = new Map<number, (t: number) => void>();
    const early = new Map<number, number>();
    observer.onMessage((message) => {
      if (message.type !== 'seen') return;
      const seen = message as Seen;
      const resolve = pending.get(seen.id);
      if (resolve) resolve(seen.t - clock.offsetMs);
      else early.set(seen.id, seen.t - clock.offsetMs);
    });
    /** Runs one task and resolves to its end-to-client latency in ms. */
    const sample = async (): Promise<number> => {
      const { task } = phase.device.queue.submit(SCRIPT, { source: 'rest' });
      const seenAt = new Promise<number>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${phase.label}: task ${task.id} not seen`)),
          phase.timeoutMs,
        );
        const done = (t: number): void => {
          clearTimeout(timer);
          pending.delete(task.id);
          resolve(t);
        };
        const already = early.get(task.id);
        if (already !== undefined) done(already);
        else pending.set(task.id, done);
      });
      if (phase.watch) observer.send({ type: 'watch', id: task.id });
      const t = await seenAt;
      const end = ends.get(task.id);
      ends.delete(task.id);
      early.delete(task.id);
      if (end === undefined) throw new Error(`${phase.label}: no end stamp for task ${task.id}`);
      return t - end;
    };
    // A few unmeasured samples first: connections, JIT.
    for (let i = 0; i < 5; i += 1) await sample();
    if (phase.gapMs === undefined) {
      for (let i = 0; i < phase.samples; i += 1) measured.recordMs(await sample());
    } else {
      const inFlight: Promise<void>[] = [];
      let failure: unknown;
      for (let i = 0; i < phase.samples && failure === undefined; i += 1) {
        inFlight.push(
          sample().then(
            (ms) => measured.recordMs(ms),
            (error: unknown) => {
              failure ??= error;
            },
          ),
        );
        await sleep(phase.gapMs);
      }
      await Promise.all(inFlight);
      if (failure !== undefined) throw failure;
    }
    const summary = measured.summary();
    ctx.log(
      `${phase.label}: n=${summary.count} p50 ${summary.p50} p99 ${summary.p99} max ${summary.max} ms ` +
        `(clock offset ${clock.offsetMs.toFixed(3)} ms ±${(clock.rttMs / 2).toFixed(3)}; ${measured.negative} negative)`,
    );
    return { ...summary, offset: clock.offsetMs };
  } finally {
    phase.device.queue.off('finished', onEnd);
    await observer.stop();
  }
}

runScenario('status-latency', async (ctx) => {
  const q = ctx.quick;
  const mosquitto = await startBenchMosquitto();
  ctx.defer(() => mosquitto.stop());
  const aedesDevice = await startBenchDevice({ deviceId: 'lat-aedes', brokerPort: 0 });
  ctx.defer(() => aedesDevice.stop());
  const mosquittoDevice = await startBenchDevice({ deviceId: 'lat-mosq', mqttUrl: mosquitto.url });
  ctx.defer(() => mosquittoDevice.stop());
  // Past the bridges' start-up sweep (about a second subscribed to their own statuses).
  await sleep(2000);
  const creds = [BENCH_USER, BENCH_PASSWORD];
  const rest = [String(aedesDevice.httpPort), ...creds];

  const phases: Phase[] = [
    {
      label: 'MQTT via embedded aedes',
      device: aedesDevice,
      observerArgs: ['mqtt', `mqtt://127.0.0.1:${aedesDevice.brokerPort}`, ...creds, 'pos'],
      samples: q ? 150 : 1500,
      watch: false,
      timeoutMs: 5000,
    },
    {
      label: 'MQTT via mosquitto',
      device: mosquittoDevice,
      observerArgs: ['mqtt', mosquitto.url, ...creds, 'pos'],
      samples: q ? 150 : 1500,
      watch: false,
      timeoutMs: 5000,
    },
    {
      label: 'REST long poll',
      device: aedesDevice,
      observerArgs: ['longpoll', ...rest],
      samples: q ? 100 : 1000,
      watch: true,
      timeoutMs: 5000,
    },
    {
      label: 'REST poll every 100 ms',
      device: aedesDevice,
      observerArgs: ['poll', ...rest, '100'],
      samples: q ? 40 : 400,
      gapMs: 25,
      watch: true,
      timeoutMs: 5000,
    },
    {
      label: 'REST poll every 1 s',
      device: aedesDevice,
      observerArgs: ['poll', ...rest, '1000'],
      samples: q ? 15 : 100,
      gapMs: 100,
      watch: true,
      timeoutMs: 10_000,
    },
  ];
  const results = new Map<string, LatencySummary>();
  for (const phase of phases) results.set(phase.label, await runPhase(ctx, phase));

  const poll100 = results.get('REST poll every 100 ms')!;
  for (const [label, s] of results) {
    const isMqtt = label.startsWith('MQTT');
    const note = `n=${s.count}`;
    ctx.report({
      figure: `${label}: p50`,
      value: s.p50,
      unit: 'ms',
      ...(isMqtt && {
        baseline: poll100.p50,
        baselineLabel: '100 ms poller p50',
        ratio: round(poll100.p50 / Math.max(s.p50, 0.001), 1),
      }),
      note,
    });
    ctx.report({
      figure: `${label}: p99`,
      value: s.p99,
      unit: 'ms',
      note,
    });
    ctx.report({ figure: `${label}: max`, value: s.max, unit: 'ms', note });
  }
});
