/**
 * Scenario 5: one device fed from MQTT (QoS 1) faster than it executes, until its queue is
 * full: it must refuse with QUEUE_FULL on its reply topic, keep memory bounded and keep serving. A
 * controller client in this process publishes scripts with up to 1,000 unacknowledged; the
 * device (own process, embedded broker, maxQueue 1000) reports memory every 100 ms. Three floods:
 * - at boot: right after the device started (its first seconds on the broker are special: the
 *   bridge sweeps stale status topics), counting lost replies, extra executions and reconnects;
 * - instant scripts (`PRINT x`): the most tasks/s one device takes from MQTT;
 * - 2 ms scripts: execution is slower than intake, so the queue fills and QUEUE_FULL must follow.
 */
import { connect, type MqttClient } from 'mqtt';
import { BENCH_PASSWORD, BENCH_USER } from '../lib/device.ts';
import { startWorker, type Worker, type WorkerMessage } from '../lib/proc.ts';
import { nowMs, round, runScenario, type ScenarioContext, sleep, withTimeout } from '../lib/scenario.ts';

interface Sample extends WorkerMessage {
  heapUsed: number;
  cpuUs: number;
  rss: number;
  queued: number;
  running: boolean;
  created: number;
  ended: number;
  finishedAt: number;
  reconnects: number;
}

interface FloodResult {
  total: number;
  publishRate: number;
  accepted: number;
  refusedFull: number;
  refusedOther: number;
  /** Scripts never answered on the device's reply topic within the wait. */
  unanswered: number;
  created: number;
  executed: number;
  taskRate: number;
  /** The device's CPU time (all threads) per script published, in µs: what the load moves least. */
  cpuPerScript: number;
  reconnects: number;
  maxHeap: number;
  maxRss: number;
  maxQueued: number;
}

const MiB = 2 ** 20;
const IN_FLIGHT = 1000;

class Flooder {
  private readonly ctx: ScenarioContext;
  private readonly client: MqttClient;
  private readonly device: Worker;
  private last: Sample | undefined;
  private peak = { heap: 0, rss: 0, queued: 0 };
  private replies = { accepted: 0, full: 0, other: 0, otherText: '' };
  private phase = 0;

  constructor(ctx: ScenarioContext, client: MqttClient, device: Worker) {
    this.ctx = ctx;
    this.client = client;
    this.device = device;
  }

  /** Wires the reply and sample counters; call once before the first flood. */
  async start(): Promise<void> {
    this.device.onMessage((message) => {
      if (message.type !== 'sample') return;
      const s = message as Sample;
      this.peak.heap = Math.max(this.peak.heap, s.heapUsed);
      this.peak.rss = Math.max(this.peak.rss, s.rss);
      this.peak.queued = Math.max(this.peak.queued, s.queued);
      this.last = s;
    });
    this.client.on('message', (_topic, payload) => {
      const reply = JSON.parse(payload.toString('utf8')) as { id?: number; error?: string };
      if (reply.id !== undefined) this.replies.accepted += 1;
      else if (reply.error?.startsWith('QUEUE_FULL')) this.replies.full += 1;
      else {
        this.replies.other += 1;
        this.replies.otherText = reply.error ?? '';
      }
    });
    await this.client.subscribeAsync('pos/devices/flood/replies/#', { qos: 1 });
    const deadline = Date.now() + 10_000;
    while (!this.last && Date.now() < deadline) await sleep(20);
    if (!this.last) throw new Error('no memory sample from the device');
  }

  get sample(): Sample {
    return this.last!;
  }

  async flood(label: string, script: string, total: number): Promise<FloodResult> {
    this.phase += 1;
    this.replies = { accepted: 0, full: 0, other: 0, otherText: '' };
    this.peak = { heap: 0, rss: 0, queued: 0 };
    this.device.send({ type: 'flood-start', label });
    const before = this.sample;
    const started = nowMs();
    let sent = 0;
    let acked = 0;
    await withTimeout(
      `${label}: publishing`,
      60_000,
      new Promise<void>((resolve, reject) => {
        const pump = (): void => {
          while (sent < total && sent - acked < IN_FLIGHT) {
            sent += 1;
            const payload = JSON.stringify({
              script,
              requestId: `p${this.phase}-${sent}`,
            });
            this.client.publishAsync('pos/devices/flood/scripts', payload, { qos: 1 }).then(() => {
              acked += 1;
              if (acked === total) resolve();
              else pump();
            }, reject);
          }
        };
        pump();
      }),
    );
    const publishedMs = nowMs() - started;
    // Replies may be lost (see the at-boot flood): wait while they keep coming, not forever.
    const answered = (): number => this.replies.accepted + this.replies.full + this.replies.other;
    let seen = answered();
    let progressAt = Date.now();
    while (answered() < total && Date.now() - progressAt < 3000) {
      await sleep(20);
      if (answered() !== seen) {
        seen = answered();
        progressAt = Date.now();
      }
    }
    // Drained: nothing queued or running and no task ended for 300 ms.
    const drainDeadline = Date.now() + 60_000;
    let ended = this.sample.ended;
    let stableSince = Date.now();
    while (Date.now() < drainDeadline) {
      await sleep(50);
      const s = this.sample;
      if (s.ended !== ended || s.queued > 0 || s.running) {
        ended = s.ended;
        stableSince = Date.now();
      } else if (Date.now() - stableSince > 300) break;
    }
    const after = this.sample;
    this.device.send({ type: 'flood-end' });
    const detail = await this.device.next<WorkerMessage & { peaks: Record<string, number> }>(
      'flood-detail',
      30_000,
    );
    if (Object.keys(detail.peaks).length > 0) this.ctx.log(`${label}: peaks ${JSON.stringify(detail.peaks)}`);
    const executed = after.ended - before.ended;
    const result: FloodResult = {
      total,
      publishRate: total / (publishedMs / 1000),
      accepted: this.replies.accepted,
      refusedFull: this.replies.full,
      refusedOther: this.replies.other,
      unanswered: total - answered(),
      created: after.created - before.created,
      executed,
      taskRate: executed / ((after.finishedAt - started) / 1000),
      cpuPerScript: (after.cpuUs - before.cpuUs) / total,
      reconnects: after.reconnects - before.reconnects,
      maxHeap: this.peak.heap,
      maxRss: this.peak.rss,
      maxQueued: this.peak.queued,
    };
    this.ctx.log(
      `${label} ("${script.replace('\n', '; ')}" x${total}): published in ${publishedMs.toFixed(0)} ms; replies: ` +
        `${result.accepted} accepted, ${result.refusedFull} QUEUE_FULL, ${result.refusedOther} other ` +
        `${this.replies.otherText}, ${result.unanswered} missing; ${result.created} tasks created, ${executed} ` +
        `executed at ${result.taskRate.toFixed(0)}/s; device CPU ${result.cpuPerScript.toFixed(0)} µs/script; ` +
        `${result.reconnects} reconnects; max queued ` +
        `${result.maxQueued}; heap max ${(result.maxHeap / MiB).toFixed(1)} MiB`,
    );
    return result;
  }
}

runScenario('overload', async (ctx) => {
  const device = startWorker('bench/workers/overload-device.ts', [], {
    // BENCH_DEVICE_NODE_FLAGS: more flags for the device (`--trace-gc`), for profiling by hand.
    execArgv: ['--expose-gc', ...(process.env.BENCH_DEVICE_NODE_FLAGS?.split(' ').filter(Boolean) ?? [])],
  });
  ctx.defer(() => device.stop(10_000));
  const ready = await device.next<WorkerMessage & { brokerPort: number; httpPort: number }>('ready', 30_000);
  const client = connect(`mqtt://127.0.0.1:${ready.brokerPort}`, {
    username: BENCH_USER,
    password: BENCH_PASSWORD,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
    clientId: 'bench-flooder',
  });
  ctx.defer(() => client.endAsync(true));
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  const flooder = new Flooder(ctx, client, device);
  await flooder.start();

  const boot = await flooder.flood('at boot', 'PRINT x', ctx.quick ? 3_000 : 5_000);
  await sleep(2000); // past the bridge's start-up sweep: the steady state
  const fast = await flooder.flood('instant', 'PRINT x', ctx.quick ? 5_000 : 50_000);
  const slow = await flooder.flood('2 ms', 'SLEEP 2\nPRINT x', ctx.quick ? 5_000 : 30_000);
  const health = await fetch(`http://127.0.0.1:${ready.httpPort}/health`);
  device.send({ type: 'final' });
  const final = await device.next<WorkerMessage & { heapUsed: number; rss: number }>('final', 10_000);

  const extra = Math.max(0, boot.created - boot.total);
  ctx.report({
    figure: 'flood at boot: scripts lost or run twice',
    value: boot.unanswered + extra,
    unit: 'scripts',
    goal: '0',
    met: boot.unanswered === 0 && extra === 0 && boot.reconnects === 0,
    note: `${boot.total} scripts: ${boot.unanswered} replies missing, ${boot.created} tasks created, ${boot.reconnects} MQTT reconnects`,
  });
  ctx.report({
    figure: 'instant scripts: tasks/s from MQTT',
    value: round(fast.taskRate, 0),
    unit: 'tasks/s',
    note: `${fast.total} scripts QoS 1, ${IN_FLIGHT} in flight, published ${round(fast.publishRate, 0)}/s; ${fast.refusedFull} refused; ${fast.unanswered} unanswered; max queued ${fast.maxQueued}`,
  });
  ctx.report({
    figure: 'instant scripts: device CPU per script',
    value: round(fast.cpuPerScript, 1),
    unit: 'µs',
    note: `process.cpuUsage() of the device (all threads, garbage collection included) over the flood, per script; at boot ${round(boot.cpuPerScript, 1)} µs, 2 ms scripts ${round(slow.cpuPerScript, 1)} µs`,
  });
  ctx.report({
    figure: '2 ms scripts: tasks/s while flooded',
    value: round(slow.taskRate, 0),
    unit: 'tasks/s',
    note: `${slow.total} scripts published at ${round(slow.publishRate, 0)}/s`,
  });
  ctx.report({
    figure: '2 ms scripts: refused with QUEUE_FULL (reply topic)',
    value: slow.refusedFull,
    unit: 'scripts',
    goal: '> 0, every script answered',
    met: slow.refusedFull > 0 && slow.unanswered === 0 && slow.accepted + slow.refusedFull === slow.total,
    note: `${slow.accepted} accepted, ${slow.refusedOther} other refusals, ${slow.unanswered} unanswered; max queued ${slow.maxQueued} (maxQueue 1000)`,
  });
  const heapPeak = Math.max(boot.maxHeap, fast.maxHeap, slow.maxHeap) / MiB;
  ctx.report({
    figure: 'device heap max during floods',
    value: round(heapPeak, 1),
    unit: 'MiB',
    // heapUsed sampled every 100 ms without gc, so it includes garbage not yet collected.
    goal: '<= 64 MiB',
    met: heapPeak <= 64,
    note: `heapUsed every 100 ms, no gc; per flood ${[boot, fast, slow].map((f) => round(f.maxHeap / MiB, 1)).join(' / ')} MiB (at boot / instant / 2 ms); RSS max ${(Math.max(boot.maxRss, fast.maxRss, slow.maxRss) / MiB).toFixed(0)} MiB`,
  });
  ctx.report({ figure: 'device heap after floods (gc)', value: round(final.heapUsed / MiB, 1), unit: 'MiB' });
  ctx.report({
    figure: 'device alive after floods (GET /health)',
    value: health.status,
    unit: 'HTTP status',
    goal: '200',
    met: health.status === 200,
  });
});
