/**
 * Scenario 5: one device fed from MQTT (QoS 1) faster than it executes, until its queue is
 * full: it must refuse with QUEUE_FULL on replyTo, keep memory bounded and keep serving. A
 * controller client in this process publishes M scripts with up to 1,000 unacknowledged; the
 * device (own process, embedded broker, maxQueue 1000) reports memory every 100 ms.
 */
import { connect } from 'mqtt';
import { BENCH_PASSWORD, BENCH_USER } from '../lib/device.ts';
import { startWorker, type WorkerMessage } from '../lib/proc.ts';
import { nowMs, round, runScenario, until, withTimeout } from '../lib/scenario.ts';

interface Sample extends WorkerMessage {
  heapUsed: number;
  rss: number;
  queued: number;
  ended: number;
  finishedAt: number;
}

const MiB = 2 ** 20;
const IN_FLIGHT = 1000;

runScenario('overload', async (ctx) => {
  const worker = startWorker('bench/workers/overload-device.ts', [], { execArgv: ['--expose-gc'] });
  ctx.defer(() => worker.stop(10_000));
  ctx.log('DEBUG start');
  const ready = await worker.next<WorkerMessage & { brokerPort: number; httpPort: number }>('ready', 30_000);
  let maxHeap = 0;
  let maxRss = 0;
  let maxQueued = 0;
  let last: Sample | undefined;
  worker.onMessage((message) => {
    if (message.type !== 'sample') return;
    const s = message as Sample;
    maxHeap = Math.max(maxHeap, s.heapUsed);
    maxRss = Math.max(maxRss, s.rss);
    maxQueued = Math.max(maxQueued, s.queued);
    last = s;
  });

  ctx.log('DEBUG ready');
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
  const replyTo = 'pos/replies/bench-flooder/r';

  let accepted = 0;
  let refusedFull = 0;
  let refusedOther = 0;
  let otherSample = '';
  client.on('message', (_topic, payload) => {
    const reply = JSON.parse(payload.toString('utf8')) as { id?: number; error?: string };
    if (reply.id !== undefined) accepted += 1;
    else if (reply.error?.startsWith('QUEUE_FULL')) refusedFull += 1;
    else {
      refusedOther += 1;
      otherSample = reply.error ?? '';
    }
  });
  await client.subscribeAsync('pos/replies/bench-flooder/#', { qos: 1 });

  let phase = 0;
  const flood = async (script: string, total: number) => {
    phase += 1;
    accepted = refusedFull = refusedOther = 0;
    maxHeap = maxRss = maxQueued = 0;
    const endedBefore = last?.ended ?? 0;
    const started = nowMs();
    let sent = 0;
    let acked = 0;
    await withTimeout(
      'flood',
      ctx.quick ? 40_000 : 100_000,
      new Promise<void>((resolve, reject) => {
        const pump = (): void => {
          while (sent < total && sent - acked < IN_FLIGHT) {
            sent += 1;
            const payload = JSON.stringify({ script, requestId: `p${phase}-${sent}`, replyTo });
            client.publishAsync('pos/devices/flood/scripts', payload, { qos: 1 }).then(() => {
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
    ctx.log(`DEBUG published ${accepted} ${refusedFull} ${last?.queued} ${last?.ended}`);
    await until('every reply', () => accepted + refusedFull + refusedOther >= total, 60_000, 10);
    await until(
      'the queue to drain',
      () => last !== undefined && last.queued === 0 && last.ended - endedBefore >= accepted,
      60_000,
      20,
    );
    const executed = last!.ended - endedBefore;
    const execMs = last!.finishedAt - started;
    const result = {
      total,
      publishRate: total / (publishedMs / 1000),
      executed,
      taskRate: executed / (execMs / 1000),
      accepted,
      refusedFull,
      refusedOther,
      maxHeap,
      maxRss,
      maxQueued,
    };
    ctx.log(
      `"${script.replace('\n', '; ')}": ${total} published in ${publishedMs.toFixed(0)} ms; ${accepted} accepted, ` +
        `${refusedFull} QUEUE_FULL, ${refusedOther} other ${otherSample}; ${executed} executed in ` +
        `${execMs.toFixed(0)} ms; max queued ${maxQueued}; heap max ${(maxHeap / MiB).toFixed(1)} MiB`,
    );
    return result;
  };

  // A: instant scripts, to see the most tasks/s one device takes from MQTT.
  const fast = await flood('PRINT x', ctx.quick ? 5_000 : 50_000);
  // B: 2 ms scripts: execution is slower than intake, so the queue fills and refusals must follow.
  const slow = await flood('SLEEP 2\nPRINT x', ctx.quick ? 5_000 : 30_000);
  const health = await fetch(`http://127.0.0.1:${ready.httpPort}/health`);
  worker.send({ type: 'final' });
  const final = await worker.next<WorkerMessage & { heapUsed: number; rss: number }>('final', 10_000);
  ctx.log(`after both floods: heap ${(final.heapUsed / MiB).toFixed(1)} MiB after gc, health ${health.status}`);

  ctx.report({
    figure: 'instant scripts: tasks/s from MQTT',
    value: round(fast.taskRate, 0),
    unit: 'tasks/s',
    note: `${fast.total} scripts QoS 1, ${IN_FLIGHT} in flight; published ${round(fast.publishRate, 0)}/s; ${fast.refusedFull} refused; max queued ${fast.maxQueued}`,
  });
  ctx.report({
    figure: '2 ms scripts: tasks/s while flooded',
    value: round(slow.taskRate, 0),
    unit: 'tasks/s',
    note: `${slow.total} scripts published at ${round(slow.publishRate, 0)}/s`,
  });
  ctx.report({
    figure: '2 ms scripts: refused with QUEUE_FULL (replyTo)',
    value: slow.refusedFull,
    unit: 'scripts',
    goal: '> 0, every script answered',
    met: slow.refusedFull > 0 && slow.accepted + slow.refusedFull === slow.total,
    note: `${slow.accepted} accepted, ${slow.refusedOther} other refusals; max queued ${slow.maxQueued} (maxQueue 1000)`,
  });
  ctx.report({
    figure: 'device heap max during floods',
    value: round(Math.max(fast.maxHeap, slow.maxHeap) / MiB, 1),
    unit: 'MiB',
    note: `RSS max ${(Math.max(fast.maxRss, slow.maxRss) / MiB).toFixed(0)} MiB`,
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
