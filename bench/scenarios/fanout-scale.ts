/**
 * Scenario: fan-out at scale. One store controller (a process of its own) sends one script to
 * group `all` on 1,000 full registers (REST, task queue, MQTT bridge; 4 host processes) and waits
 * for every register's end status, through the store broker (aedes: goal < 1 s to the last
 * FINISHED) and through mosquitto (for comparison, no goal), with the controller's CPU time,
 * event-loop utilisation and RSS during the fan-out.
 * One unmeasured warm-up, then `rounds` fan-outs; the figure is the median, the note gives
 * min/median/max. `--quick` runs 20 registers once (figures exist, nothing more). Run alone,
 * `--broker B` and `--rounds R` pick one broker and the rounds; BENCH_PROFILE_DIR=<dir> profiles
 * the last round's controller and hosts into that directory (read them with bench/profile-top.ts).
 */
import { cpus, loadavg } from 'node:os';
import { FANOUT_SCRIPT } from '../lib/fleet.ts';
import { type FanoutRun, type ScaleBroker, spread, startScaleFleet } from '../lib/scale-fleet.ts';
import { round, runScenario, type ScenarioContext } from '../lib/scenario.ts';

const DEADLINE_MS = 60_000;
const mib = (bytes: number): number => round(bytes / 2 ** 20, 0);

interface Size {
  label: string;
  registers: number;
  mode: 'full' | 'light';
  hosts: number;
  brokers: ScaleBroker[];
  goalMs: number;
  /** The broker the goal is about; the others are measured for comparison. */
  goalOn: ScaleBroker;
}

async function measure(ctx: ScenarioContext, size: Size, broker: ScaleBroker, rounds: number) {
  const fleet = await startScaleFleet({
    broker,
    registers: size.registers,
    mode: size.mode,
    hosts: size.hosts,
    onProgress: (line) => ctx.log(`${size.label} via ${broker}: ${line}`),
  });
  const profileDir = process.env.BENCH_PROFILE_DIR;
  // nats-server's JetStream consumers (one per QoS 1 subscription of a persistent session) and RSS.
  const brokerState = async (): Promise<string> => {
    // A broker too busy to answer its monitoring port within 10 s is a finding, not a failure.
    const js = await fleet.jetStream().catch(() => undefined);
    const counts = js ? `, JetStream consumers ${js.consumers}, messages ${js.messages}` : '';
    return `broker RSS ${mib(fleet.brokerRss())} MiB${counts}`;
  };
  try {
    ctx.log(
      `${size.label} via ${broker}: ${size.registers} registers up in ${Math.round(fleet.startupMs)} ms, hosts RSS ${mib(fleet.hostsRss)} MiB, ${await brokerState()}`,
    );
    // Warm-up, not counted (quick mode only checks the figures exist: no warm-up).
    if (!ctx.quick) await fleet.fanout(FANOUT_SCRIPT, DEADLINE_MS);
    const runs: Array<FanoutRun & { load: number }> = [];
    let incomplete = '';
    for (let i = 0; i < rounds; i += 1) {
      const once = () => fleet.fanout(FANOUT_SCRIPT, DEADLINE_MS);
      // The last round profiled (controller and hosts) when asked: the figures of that round are
      // then not comparable, so never in a documented run.
      const run =
        profileDir && i === rounds - 1
          ? await fleet.profiled(profileDir, `${size.registers}-${broker}`, once)
          : await once();
      runs.push({ ...run, load: loadavg()[0]! });
      if (run.finished !== size.registers)
        incomplete = `only ${run.finished}/${size.registers} FINISHED (${run.other}; ${JSON.stringify(run.missed)})`;
      ctx.log(
        `${size.label} via ${broker}: ${run.ms.toFixed(0)} ms, controller CPU ${(run.cpuUserMs + run.cpuSystemMs).toFixed(0)} ms ` +
          `(ELU ${run.elu.toFixed(2)}), hosts CPU ${run.hostsCpuMs.toFixed(0)} ms, broker CPU ${run.brokerCpuMs.toFixed(0)} ms, ${run.received} statuses, RSS ${mib(run.rss)} MiB (peak ${mib(run.rssPeak)}), ${await brokerState()} ${incomplete}`,
      );
    }
    return { runs, incomplete, startupMs: fleet.startupMs };
  } finally {
    await fleet.stop();
  }
}

runScenario('fanout-scale', async (ctx) => {
  const q = ctx.quick;
  const arg = (name: string): string | undefined => {
    const i = ctx.args.indexOf(name);
    return i >= 0 ? ctx.args[i + 1] : undefined;
  };
  const rounds = Number(arg('--rounds') ?? (q ? 1 : 5));
  const sizes: Size[] = [
    {
      label: q ? 'N=20 full (quick; goal at 1,000)' : 'N=1,000 full',
      registers: q ? 20 : 1000,
      mode: 'full',
      hosts: q ? 1 : 4,
      brokers: ['aedes', 'mosquitto'],
      goalMs: 1000,
      goalOn: 'aedes',
    },
  ];
  for (const size of sizes) {
    if (arg('--registers') !== undefined && Number(arg('--registers')) !== size.registers) continue;
    for (const broker of size.brokers) {
      if (arg('--broker') !== undefined && arg('--broker') !== broker) continue;
      const brokerRounds = rounds;
      const judged = broker === size.goalOn;
      let measured: Awaited<ReturnType<typeof measure>>;
      try {
        measured = await measure(ctx, size, broker, brokerRounds);
      } catch (error) {
        // A broker that cannot carry the fleet at all (nats-server dropping registers at start)
        // is a figure too: not measured, goal not met, with the reason.
        const reason = ((error as Error).message.split('\n')[0] ?? '').slice(0, 300);
        ctx.log(`${size.label} via ${broker}: not measured: ${reason}`);
        ctx.report({
          figure: `${size.label} via ${broker}: time to last FINISHED`,
          value: null,
          unit: 'ms',
          ...(judged && { goal: `< ${size.goalMs} ms`, met: false }),
          note: `not measured: ${reason}`,
        });
        continue;
      }
      const { runs, incomplete } = measured;
      const times = spread(runs.map((r) => r.ms));
      const cpu = spread(runs.map((r) => r.cpuUserMs + r.cpuSystemMs));
      const elu = spread(runs.map((r) => r.elu));
      const rssPeak = Math.max(...runs.map((r) => r.rssPeak));
      const all = spread(runs.map((r) => r.cpuUserMs + r.cpuSystemMs + r.hostsCpuMs + r.brokerCpuMs));
      const load = spread(runs.map((r) => r.load));
      const span = (s: { min: number; median: number; max: number }, digits = 0): string =>
        `${s.min.toFixed(digits)}/${s.median.toFixed(digits)}/${s.max.toFixed(digits)}`;
      const note = `min/median/max of ${brokerRounds}: ${span(times)} ms; load average ${span(load, 1)}; fleet up in ${round(measured.startupMs / 1000, 1)} s`;
      ctx.report({
        figure: `${size.label} via ${broker}: time to last FINISHED`,
        value: round(times.median, 0),
        unit: 'ms',
        // A round where some register's end status never came is a miss, whatever the median.
        ...(judged && { goal: `< ${size.goalMs} ms`, met: times.median < size.goalMs && incomplete === '' }),
        note: incomplete ? `${note}; ${incomplete}` : note,
      });
      ctx.report({
        figure: `${size.label} via ${broker}: controller CPU per fan-out`,
        value: round(cpu.median, 0),
        unit: 'ms',
        note: `min/median/max ${span(cpu)} ms; event-loop utilisation ${span(elu, 2)}`,
      });
      // On a shared machine the wall time mostly measures the other work; the CPU time of every
      // process of the fan-out does not, and over the machine's cores it bounds the wall time.
      ctx.report({
        figure: `${size.label} via ${broker}: CPU of all processes (controller, hosts, broker)`,
        value: round(all.median, 0),
        unit: 'ms',
        note: `min/median/max ${span(all)} ms over ${cpus().length} cores: the wall time could not be under ${round(all.median / cpus().length, 0)} ms`,
      });
      ctx.report({
        figure: `${size.label} via ${broker}: controller RSS peak`,
        value: mib(rssPeak),
        unit: 'MiB',
        note: `after the last fan-out ${mib(runs[runs.length - 1]!.rss)} MiB, heap ${mib(runs[runs.length - 1]!.heapUsed)} MiB`,
      });
    }
  }
});
