/**
 * Scenario: status latency under load. During a fan-out to 500 full
 * registers (2 host processes) the time from each register's end of task to the store
 * controller's receipt of its FINISHED status, through the store broker (aedes) and through
 * mosquitto. The end is stamped in the host by a listener put first on the queue's `finished`
 * event (as status-latency.ts does for one device); the receipt in the controller's process when
 * its `status` event delivers the FINISHED view (decoded, ordered, in the directory). The stamps
 * of three processes are corrected by each one's clock offset against this process, measured
 * over IPC (lib/clock.ts). Goal: p99 < 50 ms. `--quick` runs 20 registers once, no warm-up.
 *
 * The register hosts are the load generator, not the system under test: real registers have CPUs
 * of their own, and the store broker and the controller run on the store's server. So in the
 * figure of record the hosts are confined to the upper half of the CPUs (lib/cpu-placement.ts),
 * and the store broker and the controller, left unpinned, meet none of them on the lower half
 * (docs/decisions/bench-fleet-on-its-own-cores.md). A full run then measures again with the hosts on
 * every core, as before, and prints that figure without a goal: what a fleet on the store
 * side's cores costs it.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { type ClockOffset, measureOffset } from '../lib/clock.ts';
import {
  allowedCpus,
  confine,
  hostPlacement,
  type Placement,
  placementText,
  renice,
} from '../lib/cpu-placement.ts';
import { FANOUT_SCRIPT } from '../lib/fleet.ts';
import { Latencies } from '../lib/hist.ts';
import type { Worker, WorkerMessage } from '../lib/proc.ts';
import { type ScaleBroker, spread, startScaleFleet } from '../lib/scale-fleet.ts';
import { round, runScenario, type ScenarioContext } from '../lib/scenario.ts';
import { type StageSample, stageLine } from '../lib/stage-report.ts';

const DEADLINE_MS = 30_000;
const GOAL_P99_MS = 50;

interface Ends extends WorkerMessage {
  ends: Array<[string, number, number]>;
}

interface Stages extends WorkerMessage {
  stamps: Array<[string, number, number, number]>;
}

/** CPU time of the store broker's process (aedes, a worker of ours), µs; NaN for the others. */
async function brokerCpuUs(broker: Worker | undefined): Promise<number> {
  if (!broker) return Number.NaN;
  broker.send({ type: 'stats' });
  return (await broker.next<WorkerMessage & { cpuUs: number }>('stats', 10_000)).cpuUs;
}

interface Measure {
  broker: ScaleBroker;
  registers: number;
  rounds: number;
  /** `--broker-prof DIR`, `--stages`, `--host-prof DIR`, `--hosts-nice N` (see the scenario below). */
  brokerProf: string | undefined;
  stages: boolean;
  hostProf: string | undefined;
  hostsNice: number | undefined;
  /** Where the register hosts should run; measure() reports where they did. */
  requested: Placement;
}

async function measure(ctx: ScenarioContext, m: Measure) {
  const { broker, registers, rounds, brokerProf, stages, hostProf, hostsNice, requested } = m;
  const fleet = await startScaleFleet({
    broker,
    registers,
    mode: 'full',
    hosts: registers > 200 ? 2 : 1,
    stamp: true,
  });
  try {
    // A diagnostic, not the figure of record: the register hosts at a lower priority than the
    // broker and the controller.
    const pids = fleet.hosts.flatMap((host) => (host.pid === undefined ? [] : [host.pid]));
    if (hostsNice !== undefined) renice(pids, hostsNice);
    const placement: Placement =
      pids.length === fleet.hosts.length
        ? confine(pids, requested)
        : { kind: 'shared', why: 'a register host has no pid' };
    const latencies = new Latencies();
    const p99s: number[] = [];
    const fanoutMs: number[] = [];
    const loads: number[] = [];
    const brokerCpu: number[] = [];
    const hostsCpu: number[] = [];
    let missing = 0;
    // Round 0 is a warm-up (connections, JIT), except in quick mode, which checks figures exist.
    const first = ctx.quick ? 1 : 0;
    for (let i = first; i <= rounds; i += 1) {
      // Offsets before every round: the clocks of processes on one host drift little, but do.
      const controllerClock: ClockOffset = await measureOffset(fleet.controller);
      const hostClocks = await Promise.all(fleet.hosts.map((h) => measureOffset(h)));
      const staged = stages ? fleet.brokerWorker : undefined;
      const brokerClock = staged ? await measureOffset(staged) : undefined;
      if (staged) {
        staged.send({ type: 'stages' }); // forget the warm-up's
        await staged.next('stages', 10_000);
      }
      // Ends of earlier rounds (the warm-up's) are dropped.
      for (const host of fleet.hosts) host.send({ type: 'ends' });
      await Promise.all(fleet.hosts.map((h) => h.next<Ends>('ends', 10_000)));
      const profiled = brokerProf !== undefined && i > 0 ? fleet.brokerWorker : undefined;
      if (profiled) {
        profiled.send({ type: 'profile-start' });
        await profiled.next('profiling', 10_000);
      }
      const cpu0 = await brokerCpuUs(fleet.brokerWorker);
      const fanout = () => fleet.fanout(FANOUT_SCRIPT, DEADLINE_MS, true);
      const run =
        hostProf !== undefined && i > 0
          ? await fleet.profiled(hostProf, `round${i}`, fanout)
          : await fanout();
      const brokerCpuMs = ((await brokerCpuUs(fleet.brokerWorker)) - cpu0) / 1000;
      if (profiled) {
        profiled.send({ type: 'profile-stop', file: join(brokerProf!, `broker-round${i}.cpuprofile`) });
        await profiled.next('profiled', 30_000);
      }
      const ends = new Map<string, number>();
      for (const [index, host] of fleet.hosts.entries()) {
        host.send({ type: 'ends' });
        const message = await host.next<Ends>('ends', 10_000);
        const offset = hostClocks[index]!.offsetMs;
        for (const [deviceId, taskId, t] of message.ends) ends.set(`${deviceId}/${taskId}`, t - offset);
      }
      let inBroker = new Map<string, [number, number, number]>();
      if (staged) {
        staged.send({ type: 'stages' });
        const message = await staged.next<Stages>('stages', 10_000);
        const o = brokerClock!.offsetMs;
        inBroker = new Map(message.stamps.map(([k, a, b, c]) => [k, [a - o, b - o, c - o]]));
      }
      if (i === 0) continue;
      const round_ = new Latencies();
      const samples: StageSample[] = [];
      for (const [deviceId, taskId, t] of run.stamps ?? []) {
        const end = ends.get(`${deviceId}/${taskId}`);
        if (end === undefined) {
          missing += 1;
          continue;
        }
        const seen = t - controllerClock.offsetMs;
        const ms = seen - end;
        latencies.recordMs(ms);
        round_.recordMs(ms);
        const b = inBroker.get(`${deviceId}/${taskId}`);
        if (b && b[2] > 0) samples.push([ms, b[0] - end, b[1] - b[0], b[2] - b[1], seen - b[2]]);
      }
      const summary = round_.summary();
      p99s.push(summary.p99);
      fanoutMs.push(run.ms);
      if (!Number.isNaN(brokerCpuMs)) brokerCpu.push(brokerCpuMs);
      hostsCpu.push(run.hostsCpuMs);
      loads.push(loadavg()[0]!);
      ctx.log(
        `${registers} registers via ${broker}: fan-out ${run.ms.toFixed(0)} ms, ${summary.count} FINISHED seen, ` +
          `end to controller p50 ${summary.p50} p99 ${summary.p99} max ${summary.max} ms, ` +
          `broker CPU ${Number.isNaN(brokerCpuMs) ? run.brokerCpuMs.toFixed(0) : brokerCpuMs.toFixed(1)} ms, ` +
          `hosts CPU ${run.hostsCpuMs.toFixed(0)} ms, load ${loadavg()[0]!.toFixed(1)} ` +
          `(system calls read/write: hosts ${run.hostsSyscalls.reads}/${run.hostsSyscalls.writes}, ` +
          `broker ${run.brokerSyscalls.reads}/${run.brokerSyscalls.writes}) ` +
          `(offsets ±${(controllerClock.rttMs / 2).toFixed(3)} ms; ${round_.negative} negative)`,
      );
      if (staged) ctx.log(`  ${stageLine(samples)} (${samples.length} staged)`);
    }
    return {
      summary: latencies.summary(),
      p99s,
      fanoutMs,
      missing,
      load: spread(loads),
      brokerCpu,
      hostsCpu,
      placement,
    };
  } finally {
    await fleet.stop();
  }
}

function spreadText(values: readonly number[]): string {
  const { min, median, max } = spread(values);
  return `${min.toFixed(0)}/${median.toFixed(0)}/${max.toFixed(0)}`;
}

runScenario('status-under-load', async (ctx) => {
  const arg = (name: string): string | undefined => {
    const i = ctx.args.indexOf(name);
    return i >= 0 ? ctx.args[i + 1] : undefined;
  };
  const registers = ctx.quick ? 20 : 500;
  const rounds = Number(arg('--rounds') ?? (ctx.quick ? 1 : 5));
  // `--broker-prof DIR`: a CPU profile of the store broker's process per measured fan-out, in DIR
  // (read with bench/profile-top.ts); the profiler slows it, so never in a documented run.
  const brokerProf = arg('--broker-prof');
  // `--stages`: the store broker stamps each FINISHED status (lib/broker-stages.ts) and each round
  // logs where the time went; the stamps cost the broker a little, so never in a documented run.
  const stages = ctx.args.includes('--stages');
  // `--host-prof DIR`: CPU profiles of the register hosts and the controller per measured fan-out
  // (lib/window-profile.ts), in DIR; like --broker-prof, never in a documented run.
  const hostProf = arg('--host-prof');
  // `--hosts-nice N`: the register hosts run at nice N (setpriority), so the broker and the
  // controller get the CPU first: how much of the latency is the hosts' competition for the cores.
  const niceArg = arg('--hosts-nice');
  const hostsNice = niceArg === undefined ? undefined : Number(niceArg);
  // `--hosts-cpus LIST|shared`: the register hosts confined to these CPUs (a taskset list) or on
  // every core, and only that measurement. Default: the upper half of the CPUs (lib/cpu-placement.ts;
  // the figure of record), then, in a full run, every core (printed without a goal).
  const cpusArg = arg('--hosts-cpus');
  const allowed = allowedCpus();
  const placements: Array<{ placement: Placement; record: boolean }> =
    cpusArg === 'shared'
      ? [{ placement: { kind: 'shared' }, record: true }]
      : cpusArg !== undefined
        ? [{ placement: { kind: 'own', cpus: cpusArg, of: (allowed ?? []).join(',') }, record: true }]
        : [
            { placement: hostPlacement(allowed), record: true },
            ...(ctx.quick ? [] : [{ placement: { kind: 'shared' } as Placement, record: false }]),
          ];
  if (stages) process.env.BENCH_STAGES = '1';
  for (const broker of ['aedes', 'mosquitto'] as const) {
    if (arg('--broker') !== undefined && arg('--broker') !== broker) continue;
    let recordShared = false;
    for (const { placement: requested, record } of placements) {
      // The figure of record fell back to every core (one CPU, no taskset): it is the shared one.
      if (!record && recordShared) continue;
      const { summary, p99s, fanoutMs, missing, load, brokerCpu, hostsCpu, placement } = await measure(ctx, {
        broker,
        registers,
        rounds,
        brokerProf,
        stages,
        hostProf,
        hostsNice,
        requested,
      });
      const p99 = spread(p99s);
      const label = ctx.quick ? `${registers} registers (quick; goal at 500)` : `${registers} registers`;
      if (record) recordShared = placement.kind === 'shared';
      // The name says where the fleet ran, so two placements never share a figure.
      const where = placement.kind === 'own' ? ', fleet on its own cores' : ', fleet sharing its cores';
      const note =
        `n=${summary.count} over ${rounds} fan-outs (${spreadText(fanoutMs)} ms); ` +
        `p99 per fan-out min/median/max ${p99.min}/${p99.median}/${p99.max} ms; ` +
        `load average ${load.min.toFixed(1)}/${load.median.toFixed(1)}/${load.max.toFixed(1)}` +
        (brokerCpu.length > 0 ? `; store broker CPU per fan-out ${spreadText(brokerCpu)} ms` : '') +
        `; register hosts' CPU per fan-out ${spreadText(hostsCpu)} ms` +
        (hostsNice !== undefined ? `; register hosts at nice ${hostsNice}` : '') +
        `; ${placementText(placement)}` +
        (missing > 0 ? `; ${missing} statuses without an end stamp` : '');
      // The goal is judged on the figure of record, wherever the hosts could run (its name and
      // note say where).
      ctx.report({
        figure: `${label} via ${broker}${where}: task end to controller, p99`,
        value: summary.p99,
        unit: 'ms',
        ...(record && {
          goal: `< ${GOAL_P99_MS} ms`,
          met: summary.p99 < GOAL_P99_MS && summary.count === registers * rounds,
        }),
        note,
      });
      ctx.report({
        figure: `${label} via ${broker}${where}: task end to controller, p50`,
        value: summary.p50,
        unit: 'ms',
        note: `max ${round(summary.max, 1)} ms`,
      });
    }
  }
});
