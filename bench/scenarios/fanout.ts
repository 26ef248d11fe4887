/**
 * Scenario 3: one store controller sends one script to N registers (full devices, hosted by
 * worker processes) and waits for every end status: wall time to the last FINISHED, through a
 * store broker (aedes, its own process) and through mosquitto, against a REST controller doing
 * the same with the TypeScript client (vendorScript to each, then poll each every 100 ms).
 * Register start-up is timed separately and is not part of the fan-out figure.
 */
import { FANOUT_SCRIPT } from '../lib/fleet.ts';
import { type Fleet, median, mqttFanout, startFleet } from '../lib/fleet-run.ts';
import { startBenchMosquitto } from '../lib/mosquitto.ts';
import { startWorker, type WorkerMessage } from '../lib/proc.ts';
import { RestFanout } from '../lib/rest-fanout.ts';
import { round, runScenario, type ScenarioContext } from '../lib/scenario.ts';

const DEADLINE_MS = 30_000;

type BrokerKind = 'aedes' | 'mosquitto';

async function withBroker<T>(
  kind: BrokerKind,
  registers: number,
  body: (port: number) => Promise<T>,
): Promise<T> {
  if (kind === 'mosquitto') {
    const mosquitto = await startBenchMosquitto();
    try {
      return await body(mosquitto.port);
    } finally {
      await mosquitto.stop();
    }
  }
  const broker = startWorker('bench/workers/broker.ts', [String(registers)]);
  try {
    const ready = await broker.next<WorkerMessage & { port: number }>('ready', 30_000);
    return await body(ready.port);
  } finally {
    await broker.stop(10_000);
  }
}

async function measure(ctx: ScenarioContext, kind: BrokerKind, n: number, rounds: number) {
  return await withBroker(kind, n, async (port) => {
    const fleet: Fleet = await startFleet({
      count: n,
      devicePort: port,
      controllerPort: port,
      anonymous: kind === 'mosquitto',
      hosts: n > 200 ? 2 : 1,
    });
    try {
      ctx.log(
        `N=${n} ${kind}: ${n} registers up in ${Math.round(fleet.startupMs)} ms, RSS ${(fleet.rss / 2 ** 20).toFixed(0)} MiB`,
      );
      await mqttFanout(fleet.controller, FANOUT_SCRIPT, DEADLINE_MS); // warm-up, not counted
      const times: number[] = [];
      let incomplete = '';
      for (let i = 0; i < rounds; i += 1) {
        const run = await mqttFanout(fleet.controller, FANOUT_SCRIPT, DEADLINE_MS);
        times.push(run.ms);
        if (run.finished !== n) incomplete = `only ${run.finished}/${n} FINISHED (${run.other})`;
      }
      ctx.log(`N=${n} ${kind}: MQTT fan-out ${times.map((t) => t.toFixed(0)).join(', ')} ms ${incomplete}`);
      let rest: { ms: number; incomplete: string } | undefined;
      if (kind === 'aedes') {
        // The REST controller talks to the same registers; the broker plays no part in it.
        const client = new RestFanout(fleet.devices.map((d) => d.httpPort));
        try {
          await client.authenticate();
          await client.run(FANOUT_SCRIPT, DEADLINE_MS);
          const restTimes: number[] = [];
          let restIncomplete = '';
          for (let i = 0; i < rounds; i += 1) {
            const run = await client.run(FANOUT_SCRIPT, DEADLINE_MS);
            restTimes.push(run.ms);
            if (run.finished !== n) restIncomplete = `only ${run.finished}/${n} FINISHED`;
          }
          ctx.log(`N=${n} REST: ${restTimes.map((t) => t.toFixed(0)).join(', ')} ms ${restIncomplete}`);
          rest = { ms: median(restTimes), incomplete: restIncomplete };
        } finally {
          await client.close();
        }
      }
      return { ms: median(times), incomplete, startupMs: fleet.startupMs, rssPerDevice: fleet.rss / n, rest };
    } finally {
      await fleet.stop();
    }
  });
}

runScenario('fanout', async (ctx) => {
  const sizes = ctx.quick ? [10, 50] : [10, 100, 500];
  const rounds = ctx.quick ? 1 : 5;
  for (const n of sizes) {
    const aedes = await measure(ctx, 'aedes', n, rounds);
    const mosquitto = await measure(ctx, 'mosquitto', n, rounds);
    const rest = aedes.rest!;
    const note = `median of ${rounds}; script "${FANOUT_SCRIPT.replace('\n', '; ')}"`;
    for (const [label, m] of [
      ['aedes', aedes],
      ['mosquitto', mosquitto],
    ] as const) {
      ctx.report({
        figure: `N=${n} via ${label}: time to last FINISHED`,
        value: round(m.ms, 0),
        unit: 'ms',
        baseline: round(rest.ms, 0),
        baselineLabel: 'REST controller',
        ratio: round(rest.ms / m.ms, 2),
        note: m.incomplete ? `${note}; ${m.incomplete}` : note,
      });
    }
    ctx.report({
      figure: `N=${n} REST controller (poll 100 ms): time to last FINISHED`,
      value: round(rest.ms, 0),
      unit: 'ms',
      note: rest.incomplete || note,
    });
    ctx.report({
      figure: `N=${n} register start-up (not in the figures above)`,
      value: round(aedes.startupMs, 0),
      unit: 'ms',
      note: `RSS ${(aedes.rssPerDevice / 2 ** 20).toFixed(1)} MiB per register`,
    });
  }
});
