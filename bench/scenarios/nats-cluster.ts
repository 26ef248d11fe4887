/**
 * Scenario: fan-out on a three-node NATS JetStream cluster (test/support/nats-cluster.ts, the
 * configuration of docs/topology.md), and a node loss. Half the registers start on n1, half on
 * n2 (each given all three nodes as a `--mqtt-url` list), the controller on n3. Figures: the time
 * to the last FINISHED of a fan-out to N registers (median of the rounds), and the time from the
 * SIGKILL of a node to the last FINISHED of a job submitted right after it (the registers of that
 * node reconnect to another one meanwhile). N = 100 (three rounds, three node losses) and 1,000
 * (one node loss); quick: N = 10, one round, one node loss. `--sizes=100,1000` chooses N.
 */
import { StoreController } from '../../controller/store-controller.ts';
import { summarize } from '../../controller/types.ts';
import { installed } from '../../test/support/installed.ts';
import { silent } from '../../test/support/loggers.ts';
import { type NatsCluster, startNatsCluster } from '../../test/support/nats-cluster.ts';
import { until } from '../../test/support/waits.ts';
import { FANOUT_SCRIPT, NS, ranges } from '../lib/fleet.ts';
import { median } from '../lib/fleet-run.ts';
import { startWorker, type Worker } from '../lib/proc.ts';
import { round, runScenario, type ScenarioContext, SkipScenario } from '../lib/scenario.ts';

const DEADLINE_MS = 120_000;

function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted.map((v) => v.toFixed(0)).join(', ')} ms`;
}

async function fanout(controller: StoreController, deadlineMs: number) {
  const started = performance.now();
  const results = await controller.submit(FANOUT_SCRIPT, { to: 'all', deadlineMs });
  const summary = summarize(results);
  return {
    ms: performance.now() - started,
    finished: summary.finished,
    other: `${summary.failed} failed, ${summary.offline} offline, ${summary.noAnswer} no answer`,
  };
}

/**
 * `--consumer-replicas=1` and `--consumer-memory` (lines of the mqtt block), `--hosts=4` (device
 * host processes, default 2).
 */
interface Settings {
  mqtt: string[];
  hosts: number;
}

async function size(
  ctx: ScenarioContext,
  n: number,
  rounds: number,
  killRounds: number,
  settings: Settings,
): Promise<void> {
  const startedAt = performance.now();
  const cluster: NatsCluster = await startNatsCluster(3, settings.mqtt);
  const hosts: Worker[] = [];
  let controller: StoreController | undefined;
  const stop = async (): Promise<void> => {
    await controller?.stop();
    await Promise.all(hosts.map((h) => h.stop(30_000)));
    await cluster.stop();
  };
  try {
    // Device hosts (two by default): the registers of even hosts start on n1, of odd ones on n2.
    for (const [index, [from, to]] of ranges(n, settings.hosts).entries()) {
      hosts.push(
        startWorker('bench/workers/device-host.ts', [
          String(from),
          String(to),
          cluster.urlList(index % 2).join(','),
        ]),
      );
    }
    await Promise.all(hosts.map((h) => h.next('ready', 600_000)));
    controller = new StoreController({
      url: cluster.urlList(2),
      ns: NS,
      logger: silent,
      connectTimeoutMs: 30_000,
    });
    await controller.start();
    const c = controller;
    await until(() => c.devices().filter((d) => d.online).length >= n, `${n} registers online`, 120_000, 20);
    const startupMs = performance.now() - startedAt;
    ctx.log(
      `N=${n}: cluster and registers up, all online at the controller on n3 in ${Math.round(startupMs)} ms`,
    );
    await fanout(c, DEADLINE_MS); // warm-up
    const times: number[] = [];
    let finishedMin = n;
    let other = '';
    for (let i = 0; i < rounds; i += 1) {
      const run = await fanout(c, DEADLINE_MS);
      times.push(run.ms);
      if (run.finished < finishedMin) [finishedMin, other] = [run.finished, run.other];
    }
    ctx.log(`N=${n} NATS cluster fan-out: ${spread(times)}; fewest FINISHED ${finishedMin}/${n} ${other}`);
    ctx.report({
      figure: `N=${n} via 3-node NATS cluster: time to last FINISHED`,
      value: round(median(times), 0),
      unit: 'ms',
      goal: `all ${n} FINISHED (no time goal)`,
      met: finishedMin === n,
      note: `median of ${rounds} (all: ${spread(times)}); registers on n1 and n2, controller on n3; fewest FINISHED ${finishedMin}/${n}${finishedMin < n ? ` (${other})` : ''}`,
    });

    // The node loss: SIGKILL a node, then at once the next job. Round 1 kills n1 (half the
    // registers; they move to n2), round 2 restarts n1 and kills n2 (every register; they move
    // to n3), round 3 restarts n2 and kills n3 (every register and the controller).
    const losses: number[] = [];
    let lossFinishedMin = n;
    let lossOther = '';
    for (let r = 0; r < killRounds; r += 1) {
      if (r > 0) {
        await cluster.nodes[r - 1]?.start();
        await cluster.ready();
      }
      const killedAt = performance.now();
      await cluster.nodes[r % 3]?.kill();
      const afterKill = await fanout(c, DEADLINE_MS);
      const lossMs = performance.now() - killedAt;
      losses.push(lossMs);
      if (afterKill.finished < lossFinishedMin)
        [lossFinishedMin, lossOther] = [afterKill.finished, afterKill.other];
      ctx.log(
        `N=${n}: SIGKILL of n${(r % 3) + 1} -> next job's last FINISHED ${Math.round(lossMs)} ms; ${afterKill.finished}/${n} FINISHED ${afterKill.other}`,
      );
    }
    ctx.report({
      figure: `N=${n} NATS cluster: SIGKILL of a node -> next job's last FINISHED`,
      value: round(median(losses), 0),
      unit: 'ms',
      goal: `all ${n} FINISHED (no time goal)`,
      met: lossFinishedMin === n,
      note: `median of ${killRounds} (all, n1, n2, n3 killed in turn: ${losses.map((v) => v.toFixed(0)).join(', ')} ms); fewest FINISHED ${lossFinishedMin}/${n}${lossFinishedMin < n ? ` (${lossOther})` : ''}`,
    });
    ctx.report({
      figure: `N=${n} NATS cluster start-up (not in the figures above)`,
      value: round(startupMs, 0),
      unit: 'ms',
    });
  } finally {
    await stop();
  }
}

runScenario('nats-cluster', async (ctx) => {
  if (!installed('nats-server'))
    throw new SkipScenario('nats-server is not on PATH (nor at NATS_SERVER_BIN)');
  const sizes = ctx.quick
    ? [10]
    : (ctx.args
        .find((a) => a.startsWith('--sizes='))
        ?.slice(8)
        .split(',')
        .map(Number) ?? [100, 1000]);
  const arg = (name: string): string | undefined =>
    ctx.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const replicas = arg('consumer-replicas');
  const settings: Settings = {
    mqtt: [
      ...(replicas === undefined ? [] : [`consumer_replicas: ${Number(replicas)}`]),
      ...(ctx.args.includes('--consumer-memory') ? ['consumer_memory_storage: true'] : []),
    ],
    hosts: Number(arg('hosts') ?? 2),
  };
  if (settings.mqtt.length > 0 || settings.hosts !== 2) ctx.log(`settings: ${JSON.stringify(settings)}`);
  for (const n of sizes) await size(ctx, n, ctx.quick ? 1 : 3, ctx.quick || n > 100 ? 1 : 3, settings);
});
