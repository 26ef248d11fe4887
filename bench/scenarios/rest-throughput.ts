/**
 * Scenario 1: requests/s of `POST /api/vendor-script` (auth on, simulator, `PRINT x`) against a
 * bare fastify app answering a JSON POST with a constant, in the same run. Both servers live in
 * this process, one at a time under load; autocannon runs in a worker process so the load
 * generator does not share the server's event loop. maxQueue is 10,000,000 and retain 128: the
 * queue never refuses, so every request is a real submission (202, task created) and what is
 * measured is the submission path (auth, validation, queue, response); the simulator drains
 * the queue in the same event loop meanwhile, as on a real device.
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

runScenario('rest-throughput', async (ctx) => {
  const connections = 10;
  const warmS = ctx.quick ? 1 : 2;
  const measureS = ctx.quick ? 2 : 6;
  const rounds = ctx.quick ? 1 : 3;

  const device = await startBenchDevice({ mqtt: false, retain: 128, maxQueue: 10_000_000 });
  ctx.defer(() => device.stop());
  const token = await fetchToken(device.httpPort);

  const { app: bare, port: barePort } = await startBareApp();
  ctx.defer(() => bare.close());

  const cannon = startWorker('bench/workers/autocannon.ts');
  ctx.defer(() => cannon.stop());
  await cannon.next('ready', 20_000);

  const body = JSON.stringify({ vendorScript: 'PRINT x' });
  const targets = {
    bare: {
      url: `http://127.0.0.1:${barePort}/api/vendor-script`,
      headers: { 'content-type': 'application/json' },
    },
    device: {
      url: `http://127.0.0.1:${device.httpPort}/api/vendor-script`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    },
  };
  const fire = async (which: keyof typeof targets, durationS: number): Promise<CannonResult> => {
    cannon.send({ type: 'run', method: 'POST', body, connections, durationS, ...targets[which] });
    return await cannon.next<CannonResult>('result', (durationS + 30) * 1000);
  };

  await fire('bare', warmS);
  await fire('device', warmS);
  const idBefore = device.queue.lastIssuedId;
  const bareRuns: CannonResult[] = [];
  const deviceRuns: CannonResult[] = [];
  for (let i = 0; i < rounds; i += 1) {
    bareRuns.push(await fire('bare', measureS));
    deviceRuns.push(await fire('device', measureS));
  }
  const created = device.queue.lastIssuedId - idBefore;
  const queuedAtEnd = device.queue.queuedCount;
  await withTimeout('queue drain', 60_000, waitDrained(device.queue));

  const median = (runs: CannonResult[], pick: (r: CannonResult) => number): number => {
    const values = runs.map(pick).sort((a, b) => a - b);
    return values[Math.floor(values.length / 2)]!;
  };
  const bareRps = median(bareRuns, (r) => r.requestsPerSecond);
  const deviceRps = median(deviceRuns, (r) => r.requestsPerSecond);
  const device2xx = deviceRuns.reduce((n, r) => n + r.ok2xx, 0);
  const deviceBad = deviceRuns.reduce((n, r) => n + r.non2xx + r.errors, 0);
  const ratio = deviceRps / bareRps;
  const setup = `${connections} connections, ${rounds}x${measureS} s (median), autocannon in its own process`;

  ctx.report({ figure: 'bare fastify JSON POST', value: round(bareRps, 0), unit: 'req/s', note: setup });
  ctx.report({
    figure: 'POST /api/vendor-script (auth, simulator)',
    value: round(deviceRps, 0),
    unit: 'req/s',
    baseline: round(bareRps, 0),
    baselineLabel: 'bare fastify',
    ratio: round(ratio, 3),
    goal: '>= 0.5x bare',
    met: ratio >= 0.5,
    note: `${setup}; maxQueue 10M, retain 128 (never QUEUE_FULL)`,
  });
  ctx.report({
    figure: 'vendor-script latency p99',
    value: median(deviceRuns, (r) => r.latencyP99),
    unit: 'ms',
    baseline: median(bareRuns, (r) => r.latencyP99),
    baselineLabel: 'bare fastify',
  });
  ctx.report({
    figure: 'vendor-script non-2xx + errors',
    value: deviceBad,
    unit: 'responses',
    note: `${device2xx} accepted (202), ${created} tasks created; ${queuedAtEnd} still queued when load stopped`,
  });
  ctx.report({
    figure: 'tasks queued behind the simulator at end of load',
    value: queuedAtEnd,
    unit: 'tasks',
  });
});

async function waitDrained(queue: { queuedCount: number; runningTask: unknown }): Promise<void> {
  while (queue.queuedCount > 0 || queue.runningTask !== undefined)
    await new Promise((r) => setTimeout(r, 20));
}
