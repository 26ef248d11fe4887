/**
 * Scenario: the head office (docs/topology.md). A three-node NATS JetStream cluster with its MQTT
 * listener is the hub; 500 light simulated stores of 20 registers each are bridged into it
 * (bench/workers/store-sim.ts: per store, one persistent MQTT client per connection of its
 * Mosquitto bridge, where that connection would be, answering for its 20 registers with a reply
 * (QoS 0) and three statuses (QoS 1) each, not retained at the hub, as `hub-results` forwards
 * them; no store broker, no register process, no script runs); the head office's controller (`ns:
 * 'stores/+'`, bench/workers/hub-controller.ts) on n3. Figures: the time from a fleet job to all
 * 10,000 registers until the head office has every result (goal < 10 s; median and spread of the
 * rounds), the hub's CPU time per job (three nodes together) and RSS, the controller's; then the
 * same job with one node killed (SIGKILL) once a tenth of the results are in, n1 then n2 (each
 * restarted before the next), and whether any register ran a script twice. Quick: 10 stores x 5
 * registers, one round, one node loss. `--stores=N --registers=N --rounds=N --kills=N` change the
 * sizes. The hub is tuned as docs/topology.md says for nats-server at scale (`$MQTT_msgs` with
 * limits retention, consumers in memory); `--msgs-max-age=S` keeps its messages S seconds instead
 * of an hour; `--nats-defaults` runs nats-server's defaults instead.
 */

import { installed } from '../../test/support/installed.ts';
import { createMqttMessageStream } from '../../test/support/nats-api.ts';
import { type NatsCluster, startNatsCluster } from '../../test/support/nats-cluster.ts';
import { ranges } from '../lib/fleet.ts';
import { median } from '../lib/fleet-run.ts';
import { startWorker, type Worker, type WorkerMessage } from '../lib/proc.ts';
import { procCpuMs, procRss } from '../lib/scale-fleet.ts';
import { round, runScenario, type ScenarioContext, SkipScenario } from '../lib/scenario.ts';

const DEADLINE_MS = 120_000;
const MiB = 1024 * 1024;

interface JobDone extends WorkerMessage {
  ms: number;
  total: number;
  finished: number;
  other: string;
  cpuMs: number;
  rss: number;
  rssPeak: number;
  reasked: number;
  missed: unknown[];
}

interface Round {
  ms: number;
  finished: number;
  total: number;
  other: string;
  hubCpuMs: number;
  hubRss: number;
  ctlCpuMs: number;
  ctlRssPeak: number;
  reasked: number;
}

const list = (values: readonly number[], digits = 0): string =>
  [...values]
    .sort((a, b) => a - b)
    .map((v) => v.toFixed(digits))
    .join(', ');

function hubCpu(cluster: NatsCluster): number {
  return cluster.nodes.reduce((sum, n) => sum + (n.running ? procCpuMs(n.pid) : 0), 0);
}

function hubRss(cluster: NatsCluster): number {
  return cluster.nodes.reduce((sum, n) => sum + (n.running ? procRss(n.pid) : 0), 0);
}

async function job(cluster: NatsCluster, controller: Worker, during?: () => Promise<void>): Promise<Round> {
  // CPU of a killed node is lost with it: counted up to its kill (`during` returns before).
  const cpu0 = new Map(cluster.nodes.map((n) => [n, n.running ? procCpuMs(n.pid) : 0]));
  let killedCpu = 0;
  controller.send({ type: 'job', deadlineMs: DEADLINE_MS });
  // A job without a kill leaves its progress message unread: drop it.
  const progress = during ? undefined : controller.next('progress', DEADLINE_MS).catch(() => undefined);
  if (during) {
    const before = hubCpu(cluster);
    await during();
    killedCpu = before - hubCpu(cluster);
  }
  const done = await controller.next<JobDone>('done', DEADLINE_MS + 30_000);
  await progress;
  const cpu1 = cluster.nodes.reduce(
    (sum, n) => sum + (n.running ? procCpuMs(n.pid) - (cpu0.get(n) ?? 0) : 0),
    0,
  );
  return {
    ms: done.ms,
    finished: done.finished,
    total: done.total,
    other: done.finished === done.total ? '' : `${done.other} ${JSON.stringify(done.missed)}`,
    hubCpuMs: cpu1 + Math.max(0, killedCpu),
    hubRss: hubRss(cluster),
    ctlCpuMs: done.cpuMs,
    ctlRssPeak: done.rssPeak,
    reasked: done.reasked,
  };
}

async function executions(
  sims: readonly Worker[],
): Promise<{ executions: number; repeats: number; cpuMs: number }> {
  let executions = 0;
  let repeats = 0;
  let cpuMs = 0;
  for (const sim of sims) {
    sim.send({ type: 'count' });
    const count = await sim.next<WorkerMessage & { executions: number; repeats: number; cpuMs: number }>(
      'count',
      10_000,
    );
    executions += count.executions;
    repeats += count.repeats;
    cpuMs += count.cpuMs;
  }
  return { executions, repeats, cpuMs };
}

/** `$MQTT_msgs` with limits retention, retried while JetStream elects its first meta leader. */
async function createTunedStream(clientPorts: number[], maxAgeSeconds: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await createMqttMessageStream(clientPorts[0] ?? 0, {
        maxAgeSeconds,
        storage: 'memory',
        replicas: 3,
      });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

runScenario('head-office', async (ctx: ScenarioContext) => {
  if (!installed('nats-server'))
    throw new SkipScenario('nats-server is not on PATH (nor at NATS_SERVER_BIN)');
  const arg = (name: string): number | undefined => {
    const value = ctx.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
    return value === undefined ? undefined : Number(value);
  };
  const stores = arg('stores') ?? (ctx.quick ? 10 : 500);
  const perStore = arg('registers') ?? (ctx.quick ? 5 : 20);
  const rounds = arg('rounds') ?? (ctx.quick ? 1 : 3);
  const kills = arg('kills') ?? (ctx.quick ? 1 : 2);
  const maxAge = arg('msgs-max-age') ?? 3600;
  const n = stores * perStore;
  const size = `${stores} stores x ${perStore}`;

  // As docs/topology.md ("nats-server at scale") tunes one node, on all three: `$MQTT_msgs` with
  // limits retention (1 h, in memory, 3 replicas) before any client; --nats-defaults keeps
  // nats-server's interest retention, whose cost per QoS 1 message grows with the consumers.
  const tuned = !ctx.args.includes('--nats-defaults');
  const startedAt = performance.now();
  const cluster = await startNatsCluster(3, tuned ? ['consumer_memory_storage: true'] : [], {
    beforeMqtt: tuned ? (ports) => createTunedStream(ports, maxAge) : undefined,
  });
  ctx.defer(() => cluster.stop());
  const urls = cluster.nodes.map((node) => node.mqttUrl).join(',');
  const sims = ranges(stores, ctx.quick ? 1 : 4).map(([from, to]) =>
    startWorker('bench/workers/store-sim.ts', [String(from), String(to), String(perStore), urls]),
  );
  ctx.defer(async () => {
    await Promise.all(sims.map((s) => s.stop(30_000)));
  });
  await Promise.all(sims.map((s) => s.next('ready', 900_000)));
  const controller = startWorker('bench/workers/hub-controller.ts', [
    cluster.urlList(2).join(','),
    String(n),
  ]);
  ctx.defer(() => controller.stop(30_000));
  await controller.next('ready', 600_000);
  const startupMs = performance.now() - startedAt;
  ctx.log(`${size}: cluster, stores and controller up, ${n} registers online in ${Math.round(startupMs)} ms`);

  await job(cluster, controller); // warm-up
  const simCpu0 = (await executions(sims)).cpuMs;
  const plain: Round[] = [];
  for (let i = 0; i < rounds; i += 1) {
    const r = await job(cluster, controller);
    plain.push(r);
    ctx.log(
      `${size}: fleet job ${Math.round(r.ms)} ms, ${r.finished}/${r.total} FINISHED ${r.other}; hub CPU ${Math.round(r.hubCpuMs)} ms, controller CPU ${Math.round(r.ctlCpuMs)} ms`,
    );
  }
  const simCpuPerJob = ((await executions(sims)).cpuMs - simCpu0) / rounds;
  const ms = plain.map((r) => r.ms);
  const allFinished = plain.every((r) => r.finished === r.total && r.total === n);
  ctx.report({
    figure: `head office, ${size} via 3-node NATS hub: fleet job to every result`,
    value: round(median(ms), 0),
    unit: 'ms',
    goal: '< 10 s, every result FINISHED',
    met: allFinished && median(ms) < 10_000,
    note: `median of ${rounds} (${list(ms)} ms); fewest FINISHED ${Math.min(...plain.map((r) => r.finished))}/${n}`,
  });
  ctx.report({
    figure: `head office, ${size}: hub CPU per fleet job (3 nodes)`,
    value: round(median(plain.map((r) => r.hubCpuMs)), 0),
    unit: 'ms',
    note: `rounds: ${list(plain.map((r) => r.hubCpuMs))} ms; hub RSS after, 3 nodes together: ${list(
      plain.map((r) => r.hubRss / MiB),
    )} MiB`,
  });
  ctx.report({
    figure: `head office, ${size}: controller CPU per fleet job`,
    value: round(median(plain.map((r) => r.ctlCpuMs)), 0),
    unit: 'ms',
    note: `rounds: ${list(plain.map((r) => r.ctlCpuMs))} ms; the simulated stores' CPU (they share the machine) ${Math.round(simCpuPerJob)} ms per job; controller RSS peak ${list(
      plain.map((r) => r.ctlRssPeak / MiB),
    )} MiB`,
  });
  const lost: Round[] = [];
  for (let k = 0; k < kills; k += 1) {
    if (k > 0) {
      await cluster.nodes[k - 1]?.start();
      await cluster.ready(120_000);
    }
    const r = await job(cluster, controller, async () => {
      // A hub that fell behind may not get a tenth in for long: the node dies after 60 s anyway.
      await controller.next('progress', 60_000).catch(() => ctx.log('no tenth of the results in 60 s'));
      await cluster.nodes[k]?.kill();
    });
    lost.push(r);
    ctx.log(
      `${size}: fleet job with n${k + 1} killed a tenth in: ${Math.round(r.ms)} ms, ${r.finished}/${r.total} FINISHED ${r.other}; re-asked ${r.reasked}`,
    );
  }
  const jobs = 1 + rounds + kills;
  const counted = await executions(sims);
  const twice = counted.executions - jobs * n;

  const lostMs = lost.map((r) => r.ms);
  if (kills > 0)
    ctx.report({
      figure: `head office, ${size}: fleet job with a hub node killed mid-job`,
      value: round(median(lostMs), 0),
      unit: 'ms',
      goal: 'every result FINISHED, none run twice (no time goal)',
      met: lost.every((r) => r.finished === r.total && r.total === n) && twice === 0,
      note: `n1, n2 killed in turn with a tenth of the results in: ${lostMs.map((v) => v.toFixed(0)).join(', ')} ms; FINISHED ${lost
        .map((r) => `${r.finished}/${r.total}`)
        .join(', ')}; hub CPU ${list(lost.map((r) => r.hubCpuMs))} ms; registers re-asked ${lost
        .map((r) => r.reasked)
        .join(
          ', ',
        )}; ${counted.executions} executions for ${jobs} jobs x ${n} (${twice} extra), ${counted.repeats} repeated requests answered without running`,
    });
  ctx.report({
    figure: `head office, ${size}: start-up (not in the figures above)`,
    value: round(startupMs, 0),
    unit: 'ms',
  });
});
