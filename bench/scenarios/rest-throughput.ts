/**
 * Scenario 1: requests/s of `POST /api/vendor-script` (auth on, simulator, `PRINT x`) against a
 * bare fastify app answering a JSON POST with a constant, in the same run. The servers live in
 * this process, one at a time under load; autocannon runs in a worker process so the load
 * generator does not share the servers' event loop. maxQueue is 10,000,000 and retain 128: the
 * queue never refuses, so every request is a real submission (202, task created); the simulator
 * drains the queue in the same event loop meanwhile, as on a real device. A third target splits
 * the gap: the same POST on a second device whose queue is stopped (the submission path alone,
 * no execution). Besides requests/s, the server process's CPU time per request is measured
 * (process.cpuUsage() around each run; the servers are in this process, the load generator is
 * not): on a shared machine it moves much less than requests/s.
 */
import { startBareApp } from '../lib/bare.ts';
import { fetchToken, startBenchDevice } from '../lib/device.ts';
import { startWorker, type WorkerMessage } from '../lib/proc.ts';
import { round, runScenario, withTimeout } from '../lib/scenario.ts';

interface CannonResult extends WorkerMessage {
  requestsPerSecond: number;
  total: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  latencyP50: number;
  latencyP99: number;
}

interface Run extends CannonResult {
  /** Server CPU (user + system) per response, µs. */
  cpuPerRequest: number;
}

interface Target {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

runScenario('rest-throughput', async (ctx) => {
  const connections = 10;
  const warmS = ctx.quick ? 1 : 2;
  const measureS = ctx.quick ? 2 : 5;
  const rounds = ctx.quick ? 1 : 3;

  const device = await startBenchDevice({ mqtt: false, retain: 128, maxQueue: 10_000_000 });
  ctx.defer(() => device.stop());
  const token = await fetchToken(device.httpPort);
  // Tasks sent to this one stay queued (discarded at the end): submission without execution.
  const paused = await startBenchDevice({
    deviceId: 'paused',
    mqtt: false,
    retain: 128,
    maxQueue: 10_000_000,
  });
  ctx.defer(() => paused.stop());
  await paused.queue.stop();
  const pausedToken = await fetchToken(paused.httpPort);

  const { app: bare, port: barePort } = await startBareApp();
  ctx.defer(() => bare.close());

  const cannon = startWorker('bench/workers/autocannon.ts');
  ctx.defer(() => cannon.stop());
  await cannon.next('ready', 20_000);

  const body = JSON.stringify({ vendorScript: 'PRINT x' });
  const json = { 'content-type': 'application/json' };
  const targets: Record<'bare' | 'device' | 'paused', Target> = {
    bare: { url: `http://127.0.0.1:${barePort}/api/vendor-script`, method: 'POST', headers: json, body },
    device: {
      url: `http://127.0.0.1:${device.httpPort}/api/vendor-script`,
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body,
    },
    paused: {
      url: `http://127.0.0.1:${paused.httpPort}/api/vendor-script`,
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${pausedToken}` },
      body,
    },
  };
  const fire = async (which: keyof typeof targets, durationS: number): Promise<Run> => {
    const cpuBefore = process.cpuUsage();
    cannon.send({ type: 'run', connections, durationS, ...targets[which] });
    const result = await cannon.next<CannonResult>('result', (durationS + 30) * 1000);
    const cpu = process.cpuUsage(cpuBefore);
    return { ...result, cpuPerRequest: (cpu.user + cpu.system) / Math.max(1, result.total) };
  };

  const order = ['bare', 'device', 'paused'] as const;
  for (const which of order) await fire(which, warmS);
  const idBefore = device.queue.lastIssuedId;
  const runs: Record<(typeof order)[number], Run[]> = { bare: [], device: [], paused: [] };
  // Interleaved rounds, so a slow moment of the machine does not hit one target only.
  for (let i = 0; i < rounds; i += 1) {
    for (const which of order) runs[which].push(await fire(which, measureS));
  }
  const created = device.queue.lastIssuedId - idBefore;
  const queuedAtEnd = device.queue.queuedCount;
  await withTimeout('queue drain', 60_000, waitDrained(device.queue));

  const rps = (which: keyof typeof runs): number => median(runs[which].map((r) => r.requestsPerSecond));
  const bareRps = rps('bare');
  const deviceRps = rps('device');
  const ratio = deviceRps / bareRps;
  const setup = `${connections} connections, median of ${rounds}x${measureS} s, autocannon in its own process`;
  const versus = (value: number) => ({
    baseline: round(bareRps, 0),
    baselineLabel: 'bare fastify',
    ratio: round(value / bareRps, 3),
  });

  ctx.report({ figure: 'bare fastify JSON POST', value: round(bareRps, 0), unit: 'req/s', note: setup });
  ctx.report({
    figure: 'POST /api/vendor-script (auth, simulator)',
    value: round(deviceRps, 0),
    unit: 'req/s',
    ...versus(deviceRps),
    goal: '>= 0.5x bare',
    met: ratio >= 0.5,
    note: `${setup}; maxQueue 10M, retain 128 (never QUEUE_FULL); tasks executed meanwhile`,
  });
  ctx.report({
    figure: 'same POST, queue stopped (submission only)',
    value: round(rps('paused'), 0),
    unit: 'req/s',
    ...versus(rps('paused')),
  });
  const cpu = (which: keyof typeof runs): number => median(runs[which].map((r) => r.cpuPerRequest));
  ctx.report({ figure: 'bare fastify: server CPU per request', value: round(cpu('bare'), 1), unit: 'µs' });
  ctx.report({
    figure: 'vendor-script: server CPU per request',
    value: round(cpu('device'), 1),
    unit: 'µs',
    baseline: round(cpu('bare'), 1),
    baselineLabel: 'bare fastify',
    ratio: round(cpu('bare') / cpu('device'), 3),
    note: 'ratio = bare / device: the throughput ratio a CPU-bound server would reach',
  });
  ctx.report({
    figure: 'vendor-script, queue stopped: server CPU per request',
    value: round(cpu('paused'), 1),
    unit: 'µs',
    baseline: round(cpu('bare'), 1),
    baselineLabel: 'bare fastify',
    ratio: round(cpu('bare') / cpu('paused'), 3),
  });
  ctx.report({
    figure: 'vendor-script latency p99',
    value: median(runs.device.map((r) => r.latencyP99)),
    unit: 'ms',
    baseline: median(runs.bare.map((r) => r.latencyP99)),
    baselineLabel: 'bare fastify',
  });
  const accepted = runs.device.reduce((n, r) => n + r.ok2xx, 0);
  ctx.report({
    figure: 'vendor-script non-2xx + errors',
    value: runs.device.reduce((n, r) => n + r.non2xx + r.errors, 0),
    unit: 'responses',
    note: `${accepted} accepted (202), ${created} tasks created; ${queuedAtEnd} queued behind the simulator when the load stopped`,
  });
});

async function waitDrained(queue: { queuedCount: number; runningTask: unknown }): Promise<void> {
  while (queue.queuedCount > 0 || queue.runningTask !== undefined)
    await new Promise((r) => setTimeout(r, 20));
}
