/**
 * Scenario: requests/s of `POST /api/vendor-script` (auth on, simulator, `PRINT x`) against a
 * bare fastify app answering a JSON POST with a constant, in the same run. Each server is a
 * process of its own (bench/workers/rest-server.ts), started before the first round and loaded
 * one at a time; autocannon runs in another process. maxQueue is 10,000,000 and retain 128: the
 * queue never refuses, so every request is a real submission (202, task created); the simulator
 * drains the queue in the device's event loop meanwhile, as on a real device. A third target
 * splits the gap: the same POST on a device whose queue is stopped (the submission path alone,
 * no execution). Besides requests/s, each server's CPU time per request is measured (its own
 * process.cpuUsage() around each run): on a shared machine it moves much less than requests/s.
 * Separate processes: in one, the stopped queue's hundreds of thousands of tasks made every
 * garbage collection of the measured device slower.
 */
import { startWorker, type Worker, type WorkerMessage } from '../lib/proc.ts';
import { round, runScenario } from '../lib/scenario.ts';

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

interface Stats extends WorkerMessage {
  cpuUs: number;
  created: number;
  queued: number;
}

/** The goal (lib/goals.ts): through fastify's own routing, a device keeps this much of bare fastify. */
const GOAL_RATIO = 0.45;

runScenario('rest-throughput', async (ctx) => {
  const connections = 10;
  const warmS = ctx.quick ? 1 : 2;
  // Many short interleaved rounds, each giving its own ratio: on a shared machine a busy second
  // hits one round's pair, not a whole target (3 rounds of 5 s gave 0.41x and 1.57x in one run).
  const measureS = 2;
  const rounds = ctx.quick ? 1 : 9;

  const servers = {} as Record<'bare' | 'device' | 'paused', { worker: Worker; port: number; token: string }>;
  await Promise.all(
    (['bare', 'device', 'paused'] as const).map(async (kind) => {
      const worker = startWorker('bench/workers/rest-server.ts', [kind]);
      ctx.defer(() => worker.stop());
      const ready = await worker.next<WorkerMessage & { port: number; token: string }>('ready', 30_000);
      servers[kind] = { worker, port: ready.port, token: ready.token };
    }),
  );
  const stats = async (kind: keyof typeof servers): Promise<Stats> => {
    servers[kind].worker.send({ type: 'stats' });
    return await servers[kind].worker.next<Stats>('stats', 10_000);
  };

  const cannon = startWorker('bench/workers/autocannon.ts');
  ctx.defer(() => cannon.stop());
  await cannon.next('ready', 20_000);

  const body = JSON.stringify({ vendorScript: 'PRINT x' });
  const json = { 'content-type': 'application/json' };
  const target = (kind: keyof typeof servers): Target => ({
    url: `http://127.0.0.1:${servers[kind].port}/api/vendor-script`,
    method: 'POST',
    headers: kind === 'bare' ? json : { ...json, authorization: `Bearer ${servers[kind].token}` },
    body,
  });
  const targets = { bare: target('bare'), device: target('device'), paused: target('paused') };
  const fire = async (which: keyof typeof targets, durationS: number): Promise<Run> => {
    const before = await stats(which);
    cannon.send({ type: 'run', connections, durationS, ...targets[which] });
    const result = await cannon.next<CannonResult>('result', (durationS + 30) * 1000);
    const after = await stats(which);
    return { ...result, cpuPerRequest: (after.cpuUs - before.cpuUs) / Math.max(1, result.total) };
  };

  const order = ['bare', 'device', 'paused'] as const;
  for (const which of order) await fire(which, warmS);
  const idBefore = (await stats('device')).created;
  const runs: Record<(typeof order)[number], Run[]> = { bare: [], device: [], paused: [] };
  // Interleaved rounds, so a slow moment of the machine does not hit one target only.
  for (let i = 0; i < rounds; i += 1) {
    for (const which of order) runs[which].push(await fire(which, measureS));
  }
  const atEnd = await stats('device');
  const created = atEnd.created - idBefore;
  const queuedAtEnd = atEnd.queued;
  servers.device.worker.send({ type: 'drain' });
  const drained = await servers.device.worker.next<WorkerMessage & { queued: number }>('drained', 70_000);
  if (drained.queued > 0) throw new Error(`the device did not drain its queue: ${drained.queued} left`);

  const rps = (which: keyof typeof runs): number => median(runs[which].map((r) => r.requestsPerSecond));
  const bareRps = rps('bare');
  const deviceRps = rps('device');
  /** Each round's requests/s against the bare app's of the same round. */
  const roundRatios = (which: keyof typeof runs): number[] =>
    runs[which].map((r, i) => r.requestsPerSecond / runs.bare[i]!.requestsPerSecond);
  const ratio = median(roundRatios('device'));
  const setup = `${connections} connections, ${rounds} interleaved rounds of ${measureS} s (values: medians; ratio: median of the rounds' ratios), autocannon in its own process`;
  const versus = (which: keyof typeof runs) => ({
    baseline: round(bareRps, 0),
    baselineLabel: 'bare fastify',
    ratio: round(median(roundRatios(which)), 3),
  });

  ctx.report({ figure: 'bare fastify JSON POST', value: round(bareRps, 0), unit: 'req/s', note: setup });
  ctx.report({
    figure: 'POST /api/vendor-script (auth, simulator)',
    value: round(deviceRps, 0),
    unit: 'req/s',
    ...versus('device'),
    goal: `>= ${GOAL_RATIO}x bare`,
    met: ratio >= GOAL_RATIO,
    note: `${setup}; maxQueue 10M, retain 128 (never QUEUE_FULL); tasks executed meanwhile; each round's ratio: ${roundRatios(
      'device',
    )
      .map((r) => round(r, 3))
      .join(', ')}`,
  });
  ctx.report({
    figure: 'same POST, queue stopped (submission only)',
    value: round(rps('paused'), 0),
    unit: 'req/s',
    ...versus('paused'),
  });
  const cpu = (which: keyof typeof runs): number => median(runs[which].map((r) => r.cpuPerRequest));
  /** bare / device CPU per request, round by round (same reasoning as the requests/s ratio). */
  const cpuRatio = (which: keyof typeof runs): number =>
    median(runs[which].map((r, i) => runs.bare[i]!.cpuPerRequest / r.cpuPerRequest));
  ctx.report({ figure: 'bare fastify: server CPU per request', value: round(cpu('bare'), 1), unit: 'µs' });
  ctx.report({
    figure: 'vendor-script: server CPU per request',
    value: round(cpu('device'), 1),
    unit: 'µs',
    baseline: round(cpu('bare'), 1),
    baselineLabel: 'bare fastify',
    ratio: round(cpuRatio('device'), 3),
    note: 'ratio = bare / device: the throughput ratio a CPU-bound server would reach',
  });
  ctx.report({
    figure: 'vendor-script, queue stopped: server CPU per request',
    value: round(cpu('paused'), 1),
    unit: 'µs',
    baseline: round(cpu('bare'), 1),
    baselineLabel: 'bare fastify',
    ratio: round(cpuRatio('paused'), 3),
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
