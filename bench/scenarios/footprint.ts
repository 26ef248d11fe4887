/**
 * Scenario: the register footprint, as ratios against baselines measured in
 * the same run, every process started the way a user starts it (plain node, the built CLI in
 * dist/; the scenario builds it first when a source file is newer):
 * - `regbridge --help` wall time against `node -e 0` (no goal);
 * - `regbridge serve` (embedded broker, one user) from spawn to the first 200 of `/health`,
 *   against `node -e 0`; goal <= 4x;
 * - RSS of that `serve` idle (2 s after /health answered, from /proc) against a bare fastify app
 *   (bench/workers/bare-fastify.mjs) measured the same way; goal <= 1.25x;
 * - beside them, no goal: the CPU time each server used until its first /health answered (every
 *   thread's, from /proc/<pid>/task/<tid>/schedstat), which a loaded machine moves much less than
 *   wall time.
 * Medians of 7 runs (quick: 2), the targets interleaved so a busy moment hits all of them.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { terminate } from '../../test/support/processes.ts';
import { BENCH_PASSWORD, BENCH_USER } from '../lib/device.ts';
import { ROOT } from '../lib/proc.ts';
import { round, runScenario, type ScenarioContext, sleep, withTimeout } from '../lib/scenario.ts';

const MiB = 2 ** 20;
const CLI = join(ROOT, 'bin/regbridge.js');
const SOURCES = ['cli', 'src', 'bridge', 'broker', 'controller'];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** The CLI runs dist/: build it when it is missing or older than a source file. */
function ensureBuilt(ctx: ScenarioContext): void {
  let built = 0;
  try {
    built = statSync(join(ROOT, 'dist/bundle/main.js')).mtimeMs;
  } catch {
    // not built yet
  }
  if (built > 0 && SOURCES.every((dir) => newestSource(join(ROOT, dir)) < built)) return;
  ctx.log('dist/ is missing or older than the sources: npm run build');
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'ignore' });
}

/** Wall time of a process that runs to its end, ms. */
async function timeToExit(args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited with ${code}`);
  return performance.now() - started;
}

interface Served {
  /** Spawn to the first 200 of /health, ms. */
  healthMs: number;
  /** CPU time of all its threads until then, ms. */
  healthCpuMs: number;
  /** VmRSS after 2 s idle, bytes. */
  idleRss: number;
}

/** On-CPU time of every thread of a process so far (schedstat's first field, ns), ms. */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e6;
}

/** Starts a server that prints `listening on http://host:port`, times /health, reads its idle RSS. */
async function serve(args: string[]): Promise<Served> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let port: string | undefined;
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      port ??= /listening on https?:\/\/[^\s:]+:(\d+)/.exec(output)?.[1];
    });
    const { wall: healthMs, cpu: healthCpuMs } = await withTimeout(
      `/health of node ${args.join(' ')}`,
      30_000,
      (async () => {
        for (;;) {
          if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}: ${output}`);
          if (port !== undefined) {
            const answered = await fetch(`http://127.0.0.1:${port}/health`).then(
              (r) => r.status === 200,
              () => false,
            );
            if (answered) return { wall: performance.now() - started, cpu: cpuMs(child.pid!) };
          }
          await sleep(2);
        }
      })(),
    );
    await sleep(2000);
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const idleRss = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    return { healthMs, healthCpuMs, idleRss };
  } finally {
    await terminate(child);
  }
}

runScenario('footprint', async (ctx) => {
  ensureBuilt(ctx);
  const runs = ctx.quick ? 2 : 7;
  const nodeMs: number[] = [];
  const helpMs: number[] = [];
  const device: Served[] = [];
  const bare: Served[] = [];
  const serveArgs = [
    CLI,
    'serve',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--broker-port',
    '0',
    '--broker-host',
    '127.0.0.1',
    '--user',
    `${BENCH_USER}:${BENCH_PASSWORD}`,
    '--log-level',
    'warn',
  ];
  await timeToExit(['-e', '0']); // the page cache warm for everybody
  await timeToExit([CLI, '--help']);
  for (let i = 0; i < runs; i += 1) {
    nodeMs.push(await timeToExit(['-e', '0']));
    helpMs.push(await timeToExit([CLI, '--help']));
    device.push(await serve(serveArgs));
    bare.push(await serve([join(ROOT, 'bench/workers/bare-fastify.mjs')]));
  }
  const nodeBase = median(nodeMs);
  const setup = `median of ${runs} runs, interleaved; built CLI in dist/, plain node`;
  ctx.report({ figure: 'node -e 0: wall time', value: round(nodeBase, 1), unit: 'ms', note: setup });
  const help = median(helpMs);
  ctx.report({
    figure: 'regbridge --help: wall time',
    value: round(help, 1),
    unit: 'ms',
    baseline: round(nodeBase, 1),
    baselineLabel: 'node -e 0',
    ratio: round(help / nodeBase, 2),
    note: `${setup}; runs ${helpMs.map((v) => round(v, 0)).join(', ')} ms`,
  });
  const health = median(device.map((d) => d.healthMs));
  ctx.report({
    figure: 'serve (embedded broker): start to /health 200',
    value: round(health, 1),
    unit: 'ms',
    baseline: round(nodeBase, 1),
    baselineLabel: 'node -e 0',
    ratio: round(health / nodeBase, 2),
    goal: '<= 4x node -e 0',
    met: health <= 4 * nodeBase,
    note: `${setup}; runs ${device.map((d) => round(d.healthMs, 0)).join(', ')} ms`,
  });
  ctx.report({
    figure: 'bare fastify: start to /health 200',
    value: round(median(bare.map((d) => d.healthMs)), 1),
    unit: 'ms',
  });
  for (const [label, runsOf] of [
    ['serve (embedded broker)', device],
    ['bare fastify', bare],
  ] as const) {
    ctx.report({
      figure: `${label}: CPU to /health 200`,
      value: round(median(runsOf.map((d) => d.healthCpuMs)), 1),
      unit: 'ms',
      note: `all threads, from /proc; runs ${runsOf.map((d) => round(d.healthCpuMs, 0)).join(', ')} ms`,
    });
  }
  const bareRss = median(bare.map((d) => d.idleRss)) / MiB;
  const deviceRss = median(device.map((d) => d.idleRss)) / MiB;
  ctx.report({ figure: 'bare fastify: idle RSS', value: round(bareRss, 1), unit: 'MiB', note: setup });
  ctx.report({
    figure: 'serve (embedded broker): idle RSS',
    value: round(deviceRss, 1),
    unit: 'MiB',
    baseline: round(bareRss, 1),
    baselineLabel: 'bare fastify',
    ratio: round(deviceRss / bareRss, 3),
    goal: '<= 1.25x bare fastify',
    met: deviceRss <= 1.25 * bareRss,
    note: `${setup}; 2 s after /health answered; runs ${device.map((d) => round(d.idleRss / MiB, 1)).join(', ')} MiB`,
  });
});
