/**
 * `npm run bench [-- --quick] [-- --only a,b] [-- --out FILE]`: runs every scenario in a child
 * process of its own (a process group, so a time-out kills brokers and workers with it), prints
 * one table, then each performance goal (lib/goals.ts) met or missed with its figure, and writes
 * bench/results.json. Exits non-zero only when a scenario crashed or a goal's figure is missing; a
 * missed goal is a figure like any other (CI runs --quick and never asserts a time).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { waitExit } from '../test/support/processes.ts';
import { judgeGoals, renderGoals } from './lib/goals.ts';
import { ROOT, startWorker } from './lib/proc.ts';
import { renderTable } from './lib/table.ts';
import type { Figure, ResultsFile, ScenarioMessage, ScenarioOutcome } from './lib/types.ts';

interface ScenarioSpec {
  name: string;
  file: string;
  /** Seconds allowed before the scenario is killed and reported as crashed. */
  quickTimeout: number;
  fullTimeout: number;
}

// Debian puts mosquitto and nats-server in /usr/sbin, which a non-login shell may not have on
// PATH; the scenarios find broker programs on PATH (test/support/installed.ts), as the tests do.
process.env.PATH = [process.env.PATH, '/usr/sbin', '/usr/local/sbin'].filter(Boolean).join(':');

const SCENARIOS: ScenarioSpec[] = [
  { name: 'rest-throughput', file: 'bench/scenarios/rest-throughput.ts', quickTimeout: 40, fullTimeout: 180 },
  { name: 'status-latency', file: 'bench/scenarios/status-latency.ts', quickTimeout: 40, fullTimeout: 180 },
  { name: 'fanout', file: 'bench/scenarios/fanout.ts', quickTimeout: 60, fullTimeout: 300 },
  { name: 'fanout-scale', file: 'bench/scenarios/fanout-scale.ts', quickTimeout: 180, fullTimeout: 1800 },
  {
    name: 'status-under-load',
    file: 'bench/scenarios/status-under-load.ts',
    quickTimeout: 60,
    fullTimeout: 480,
  },
  { name: 'memory', file: 'bench/scenarios/memory.ts', quickTimeout: 40, fullTimeout: 300 },
  { name: 'overload', file: 'bench/scenarios/overload.ts', quickTimeout: 40, fullTimeout: 120 },
  { name: 'deep-body', file: 'bench/scenarios/deep-body.ts', quickTimeout: 60, fullTimeout: 120 },
  { name: 'cluster', file: 'bench/scenarios/cluster.ts', quickTimeout: 40, fullTimeout: 180 },
  { name: 'footprint', file: 'bench/scenarios/footprint.ts', quickTimeout: 60, fullTimeout: 120 },
  { name: 'nats-cluster', file: 'bench/scenarios/nats-cluster.ts', quickTimeout: 90, fullTimeout: 1500 },
  { name: 'head-office', file: 'bench/scenarios/head-office.ts', quickTimeout: 120, fullTimeout: 1800 },
  { name: 'history', file: 'bench/scenarios/history.ts', quickTimeout: 90, fullTimeout: 1200 },
  {
    name: 'controller-service',
    file: 'bench/scenarios/controller-service.ts',
    quickTimeout: 60,
    fullTimeout: 300,
  },
];

function parseArgs(argv: string[]): { quick: boolean; only: string[] | undefined; out: string } {
  const quick = argv.includes('--quick');
  const onlyIndex = argv.indexOf('--only');
  const only = onlyIndex >= 0 ? (argv[onlyIndex + 1] ?? '').split(',').filter(Boolean) : undefined;
  const outIndex = argv.indexOf('--out');
  const out = resolve(
    ROOT,
    outIndex >= 0 ? (argv[outIndex + 1] ?? 'bench/results.json') : 'bench/results.json',
  );
  return { quick, only, out };
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

async function runOne(spec: ScenarioSpec, quick: boolean): Promise<ScenarioOutcome> {
  const started = Date.now();
  const figures: Figure[] = [];
  const worker = startWorker(spec.file, quick ? ['--quick'] : [], { detached: true });
  // Ctrl-C of the run takes the scenario's whole group (brokers, workers) with it.
  const onInterrupt = (): void => {
    killGroup(worker.pid, 'SIGKILL');
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  let final: ScenarioMessage | undefined;
  worker.onMessage((raw) => {
    const message = raw as unknown as ScenarioMessage;
    if (message.type === 'figure') figures.push(message.figure);
    else if (message.type === 'log') console.error(message.text);
    else final = message;
  });
  const timeoutS = quick ? spec.quickTimeout : spec.fullTimeout;
  const exited = await waitExit(worker.child, timeoutS * 1000);
  let timedOut = false;
  if (!exited) {
    timedOut = true;
    killGroup(worker.pid, 'SIGTERM');
    if (!(await waitExit(worker.child, 5000))) killGroup(worker.pid, 'SIGKILL');
    await waitExit(worker.child, 2000);
  }
  // Whatever the scenario left behind in its group (brokers, workers) goes too.
  killGroup(worker.pid, 'SIGKILL');
  process.off('SIGINT', onInterrupt);
  const durationMs = Date.now() - started;
  const outcome = (status: ScenarioOutcome['status'], reason?: string): ScenarioOutcome => ({
    scenario: spec.name,
    status,
    ...(reason !== undefined && { reason }),
    durationMs,
    figures,
  });
  const last = final as ScenarioMessage | undefined;
  if (timedOut) return outcome('crashed', `timed out after ${timeoutS} s`);
  if (last?.type === 'skipped') return outcome('skipped', `skipped: ${last.reason}`);
  if (last?.type === 'error') return outcome('crashed', last.message);
  if (last?.type !== 'done')
    return outcome('crashed', `exited (code ${worker.child.exitCode}) without finishing`);
  if (figures.length === 0) return outcome('crashed', 'no figure produced');
  return outcome('ok');
}

async function main(): Promise<number> {
  const { quick, only, out } = parseArgs(process.argv.slice(2));
  const selected = SCENARIOS.filter((s) => !only || only.includes(s.name));
  if (selected.length === 0) {
    console.error(`no scenario selected; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
    return 2;
  }
  const started = Date.now();
  const loadStart = loadavg().map((l) => Math.round(l * 100) / 100);
  const outcomes: ScenarioOutcome[] = [];
  for (const spec of selected) {
    console.error(`== ${spec.name}${quick ? ' (quick)' : ''}`);
    const outcome = await runOne(spec, quick);
    console.error(`== ${spec.name}: ${outcome.status} in ${(outcome.durationMs / 1000).toFixed(1)} s`);
    if (outcome.status === 'crashed') console.error(outcome.reason);
    outcomes.push(outcome);
  }
  const results: ResultsFile = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    quick,
    durationMs: Date.now() - started,
    loadavg: { start: loadStart, end: loadavg().map((l) => Math.round(l * 100) / 100) },
    scenarios: outcomes.map(({ figures: _figures, ...rest }) => rest),
    results: outcomes.flatMap((o) => o.figures),
  };
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(renderTable(outcomes));
  const goals = judgeGoals(outcomes, quick);
  console.log(`\n${renderGoals(goals)}`);
  console.log(
    `\n${results.cpus} cpus (${results.cpuModel}), node ${results.node}, ${quick ? 'quick' : 'full'} run in ${(results.durationMs / 1000).toFixed(1)} s; results in ${out}`,
  );
  const failed = outcomes.filter((o) => o.status === 'crashed');
  if (failed.length > 0) {
    console.error(`crashed: ${failed.map((o) => o.scenario).join(', ')}`);
    return 1;
  }
  const missing = goals.filter((g) => g.status === 'no figure');
  if (missing.length > 0) {
    console.error(`no figure for: ${missing.map((g) => g.goal.text).join('; ')}`);
    return 1;
  }
  return 0;
}

process.exitCode = await main();
