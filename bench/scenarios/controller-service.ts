/**
 * Scenario: the controller service (`regbridge controller`, its own process). (1) A job to 1,000
 * registers through the service's HTTP API (batchSize unlimited; POST /api/jobs, then the
 * event stream until COMPLETED); goal < 1 s. The CLI fan-out (`regbridge fanout`'s library:
 * StoreController.submit to group all) on the same registers in the same run is its baseline,
 * without a goal. (2) The service's RSS with 10,000 ended jobs in its history against its RSS
 * with none (no goal: only jobs in progress live in memory).
 * (3) The same job in 10 waves of 10% against the job without waves; goal: within 10x (each
 * wave waits for the one before to end). (4) Full runs only: a schedule's job is created within
 * 1 s of its cron time (it waits for the next whole minute; BENCH_CTL_SCHEDULE=1 runs it with
 * --quick too).
 *
 * BENCH_CTL_ONLY=fanout|history runs one half; BENCH_CTL_ROUNDS=n sets the rounds of the
 * fan-out; BENCH_CTL_REGISTERS=n its registers; BENCH_CTL_CPU_PROF=DIR runs the service process
 * with `--cpu-prof --cpu-prof-dir DIR`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FANOUT_SCRIPT } from '../lib/fleet.ts';
import { median, mqttFanout, startFleet } from '../lib/fleet-run.ts';
import { startWorker, type Worker, type WorkerMessage } from '../lib/proc.ts';
import { round, runScenario, type ScenarioContext, sleep } from '../lib/scenario.ts';

const DEADLINE_MS = 30_000;
/** Pause before each measured fan-out or job. */
const SETTLE_MS = 300;
const HISTORY_JOBS = 10_000;
/** The goal (lib/goals.ts): a job to 1,000 registers, POST to COMPLETED. */
const GOAL_MS = 1000;
const ADMIN = { userName: 'admin', password: 'bench-admin-pw' };

function profileFlags(): string[] {
  const dir = process.env.BENCH_CTL_CPU_PROF;
  return dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];
}

interface Ready extends WorkerMessage {
  httpPort: number;
  rss: number;
  heapUsed: number;
}

async function startService(
  brokerPort: number,
  db: string,
  historyJobs: number,
): Promise<{ worker: Worker; ready: Ready }> {
  const worker = startWorker(
    'bench/workers/controller-service.ts',
    [String(brokerPort), db, String(historyJobs)],
    { execArgv: ['--expose-gc', ...profileFlags()] },
  );
  const ready = await worker.next<Ready>('ready', 120_000);
  return { worker, ready };
}

/**
 * CPU time (user + system, ms) of every process of this scenario's process group, by role: where
 * a job's extra cost goes (the service, the store broker, the registers, this process).
 */
function groupCpu(): Map<string, number> {
  const fieldsOf = (stat: string): string[] => stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const group = fieldsOf(readFileSync('/proc/self/stat', 'utf8'))[2];
  const tickMs = 10; // USER_HZ is 100 on Linux
  const cpu = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let fields: string[];
    let command: string;
    try {
      fields = fieldsOf(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (fields[2] !== group) continue;
    const role =
      Number(pid) === process.pid
        ? 'bench (CLI controller, SSE reader)'
        : command.includes('workers/controller-service.ts')
          ? 'service'
          : command.includes('workers/broker.ts')
            ? 'broker'
            : command.includes('workers/device-host.ts')
              ? 'registers'
              : 'other';
    cpu.set(role, (cpu.get(role) ?? 0) + (Number(fields[11]) + Number(fields[12])) * tickMs);
  }
  return cpu;
}

function cpuSince(before: Map<string, number>): Map<string, number> {
  const now = groupCpu();
  return new Map([...now].map(([role, ms]) => [role, ms - (before.get(role) ?? 0)]));
}

async function login(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  return ((await response.json()) as { token: string }).token;
}

/** One job to every register through the HTTP API: ms from POST to the COMPLETED event, and how many FINISHED. */
async function serviceJob(
  port: number,
  token: string,
  extra: Record<string, unknown> = {},
): Promise<{ ms: number; finished: number }> {
  const abort = new AbortController();
  const events = await fetch(`http://127.0.0.1:${port}/api/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  const reader = events.body!.getReader();
  const decoder = new TextDecoder();
  const started = performance.now();
  const created = await fetch(`http://127.0.0.1:${port}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({
      script: FANOUT_SCRIPT,
      target: { group: 'all' },
      deadlineMs: DEADLINE_MS,
      ...extra,
    }),
  });
  const { jobId } = (await created.json()) as { jobId: string };
  let buffer = '';
  let finished = -1;
  while (finished < 0) {
    const { value, done } = await reader.read();
    if (done) throw new Error('event stream ended');
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      // Only the job's end is looked at: parsing the other events would load the bench's own
      // process, which also runs the CLI fan-out's controller.
      if (!block.startsWith('event: job\n') || !block.includes('"endedAt"')) continue;
      const job = JSON.parse(block.slice(block.indexOf('data: ') + 6)) as {
        jobId: string;
        endedAt?: string;
        counts: { finished: number };
      };
      if (job.jobId === jobId && job.endedAt !== undefined) finished = job.counts.finished;
    }
  }
  const ms = performance.now() - started;
  abort.abort();
  await reader.cancel().catch(() => undefined);
  return { ms, finished };
}

async function fanoutComparison(ctx: ScenarioContext, n: number, rounds: number, dir: string): Promise<void> {
  const broker = startWorker('bench/workers/broker.ts', [String(n)]);
  ctx.defer(() => broker.stop(10_000));
  const { port } = await broker.next<WorkerMessage & { port: number }>('ready', 30_000);
  const fleet = await startFleet({
    count: n,
    devicePort: port,
    controllerPort: port,
    anonymous: false,
    hosts: n > 200 ? 2 : 1,
  });
  ctx.defer(() => fleet.stop());
  const { worker, ready } = await startService(port, join(dir, 'fanout.db'), 0);
  ctx.defer(() => worker.stop(10_000));
  const token = await login(ready.httpPort);
  // Warm-up of both paths, not counted.
  await mqttFanout(fleet.controller, FANOUT_SCRIPT, DEADLINE_MS);
  await serviceJob(ready.httpPort, token);
  const cli: number[] = [];
  const service: number[] = [];
  let incomplete = '';
  const cpu = { cli: [] as Map<string, number>[], service: [] as Map<string, number>[] };
  const runCli = async (): Promise<void> => {
    const before = groupCpu();
    const a = await mqttFanout(fleet.controller, FANOUT_SCRIPT, DEADLINE_MS);
    cpu.cli.push(cpuSince(before));
    cli.push(a.ms);
    if (a.finished !== n) incomplete += ` CLI: ${a.finished}/${n} FINISHED;`;
  };
  const runService = async (): Promise<void> => {
    const before = groupCpu();
    const b = await serviceJob(ready.httpPort, token);
    cpu.service.push(cpuSince(before));
    service.push(b.ms);
    if (b.finished !== n) incomplete += ` service: ${b.finished}/${n} FINISHED;`;
  };
  for (let i = 0; i < rounds; i += 1) {
    // Each path starts from a quiet fleet (every process has handled the other path's statuses
    // and events), and they take turns going first, so neither pays for the other.
    for (const path of i % 2 === 0 ? [runCli, runService] : [runService, runCli]) {
      await sleep(SETTLE_MS);
      await path();
    }
  }
  ctx.log(
    `N=${n}: CLI fan-out ${cli.map((t) => t.toFixed(0)).join(', ')} ms; service job ${service.map((t) => t.toFixed(0)).join(', ')} ms`,
  );
  const cpuMedians = (runs: Map<string, number>[]): string =>
    [...(runs[0]?.keys() ?? [])]
      .map((role) => `${role} ${median(runs.map((r) => r.get(role) ?? 0))}`)
      .join(', ');
  ctx.log(`N=${n}: CPU ms per CLI fan-out (median): ${cpuMedians(cpu.cli)}`);
  ctx.log(`N=${n}: CPU ms per service job (median): ${cpuMedians(cpu.service)}`);
  const ratio = median(service) / median(cli);
  // Each round's own ratio (service after CLI, back to back): the spread the docs quote.
  const ratios = service.map((t, i) => t / cli[i]!);
  ctx.log(`N=${n}: per-round ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}`);
  ctx.report({
    figure: `N=${n} job through the service (POST to COMPLETED event)`,
    value: round(median(service), 0),
    unit: 'ms',
    baseline: round(median(cli), 0),
    baselineLabel: 'CLI fan-out (StoreController.submit)',
    ratio: round(ratio, 2),
    goal: `< ${GOAL_MS} ms`,
    met: median(service) < GOAL_MS && incomplete === '',
    note: `median of ${rounds}; per-round ratio ${round(Math.min(...ratios), 2)}-${round(median(ratios), 2)}-${round(Math.max(...ratios), 2)} (min-median-max); spread service ${round(Math.min(...service), 0)}-${round(Math.max(...service), 0)} ms, CLI ${round(Math.min(...cli), 0)}-${round(Math.max(...cli), 0)} ms${incomplete}`,
  });
  await wavesJob(ctx, n, ready.httpPort, token, median(service));
  if (!ctx.quick || process.env.BENCH_CTL_SCHEDULE === '1')
    await scheduleLateness(ctx, ready.httpPort, token);
}

/** The same job in 10 waves of 10% each, against the plain job just measured. */
async function wavesJob(
  ctx: ScenarioContext,
  n: number,
  port: number,
  token: string,
  plainMs: number,
): Promise<void> {
  await sleep(SETTLE_MS);
  const waves = Array.from({ length: 10 }, () => ({ size: '10%' }));
  const { ms, finished } = await serviceJob(port, token, { rollout: { waves } });
  ctx.report({
    figure: `N=${n} job in 10 waves through the service`,
    value: round(ms, 0),
    unit: 'ms',
    baseline: round(plainMs, 0),
    baselineLabel: 'the same job without waves',
    ratio: round(ms / plainMs, 2),
    // Ten waves run one after another, each waiting for the one before to end.
    goal: 'within 10x of the job without waves',
    met: ms / plainMs <= 10 && finished === n,
    note: `${finished}/${n} FINISHED`,
  });
}

/** A schedule due at the next whole minute: ms from its cron time to its job's creation. */
async function scheduleLateness(ctx: ScenarioContext, port: number, token: string): Promise<void> {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const due = new Date(Math.ceil((Date.now() + 2000) / 60_000) * 60_000);
  const created = await fetch(`http://127.0.0.1:${port}/api/schedules`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name: 'bench',
      cron: `${due.getUTCMinutes()} ${due.getUTCHours()} * * *`,
      timezone: 'UTC',
      job: { script: FANOUT_SCRIPT, target: { group: 'all' }, deadlineMs: DEADLINE_MS },
    }),
  });
  const { scheduleId } = (await created.json()) as { scheduleId: string };
  let job: { createdAt: string } | undefined;
  for (let i = 0; i < 1000 && !job; i += 1) {
    await sleep(100);
    const list = await fetch(`http://127.0.0.1:${port}/api/jobs?limit=5`, { headers });
    const { jobs } = (await list.json()) as { jobs: { scheduleId?: string; createdAt: string }[] };
    job = jobs.find((j) => j.scheduleId === scheduleId);
  }
  if (!job) throw new Error('the schedule did not fire within 100 s');
  const lateMs = Date.parse(job.createdAt) - due.getTime();
  ctx.report({
    figure: 'schedule: job created after its cron time',
    value: lateMs,
    unit: 'ms',
    goal: 'within 1 s',
    met: lateMs >= 0 && lateMs <= 1000,
    note: `cron time ${due.toISOString()}`,
  });
}

async function historyMemory(ctx: ScenarioContext, dir: string): Promise<void> {
  const broker = startWorker('bench/workers/broker.ts', ['1']);
  ctx.defer(() => broker.stop(10_000));
  const { port } = await broker.next<WorkerMessage & { port: number }>('ready', 30_000);
  const measure = async (jobs: number): Promise<{ rss: number; heapUsed: number }> => {
    const { worker, ready } = await startService(port, join(dir, `history-${jobs}.db`), jobs);
    try {
      // Read the history as the dashboard does: the first pages of jobs and one job.
      const token = await login(ready.httpPort);
      for (let page = 0; page < 5; page += 1) {
        await fetch(`http://127.0.0.1:${ready.httpPort}/api/jobs?limit=50`, {
          headers: { authorization: `Bearer ${token}` },
        });
      }
      worker.send({ type: 'measure' });
      return await worker.next<WorkerMessage & { rss: number; heapUsed: number }>('memory', 30_000);
    } finally {
      await worker.stop(10_000);
    }
  };
  const empty = await measure(0);
  const full = await measure(HISTORY_JOBS);
  const mib = (bytes: number): number => round(bytes / 2 ** 20, 1);
  ctx.log(
    `RSS empty ${mib(empty.rss)} MiB (heap ${mib(empty.heapUsed)}), ${HISTORY_JOBS} jobs ${mib(full.rss)} MiB (heap ${mib(full.heapUsed)})`,
  );
  ctx.report({
    figure: `service RSS with ${HISTORY_JOBS} jobs of history`,
    value: mib(full.rss),
    unit: 'MiB',
    baseline: mib(empty.rss),
    baselineLabel: 'empty history',
    ratio: round(full.rss / empty.rss, 2),
    note: `after gc; heap ${mib(full.heapUsed)} vs ${mib(empty.heapUsed)} MiB; 5 results per job`,
  });
}

runScenario('controller-service', async (ctx) => {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-bench-ctl-'));
  ctx.defer(() => rmSync(dir, { recursive: true, force: true }));
  const only = process.env.BENCH_CTL_ONLY;
  if (only !== 'fanout') await historyMemory(ctx, dir);
  const rounds = Number(process.env.BENCH_CTL_ROUNDS) || (ctx.quick ? 1 : 7);
  const registers = Number(process.env.BENCH_CTL_REGISTERS) || (ctx.quick ? 50 : 1000);
  if (only !== 'history') await fanoutComparison(ctx, registers, rounds, dir);
});
