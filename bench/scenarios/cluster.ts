/**
 * Scenario 6: fan-out through a two-instance store broker cluster sharing state over Redis
 * (two StoreBroker processes with redisUrl, a redis-server of our own): the registers connect
 * to instance A, the controller to instance B, so every script and every status crosses Redis.
 * N = 100 (quick: 10). Compare with the single aedes broker of the fan-out scenario.
 */
import { installed } from '../../test/support/installed.ts';
import { startRedisServer } from '../../test/support/redis-server.ts';
import { FANOUT_SCRIPT } from '../lib/fleet.ts';
import { median, mqttFanout, startFleet } from '../lib/fleet-run.ts';
import { startWorker, type Worker, type WorkerMessage } from '../lib/proc.ts';
import { round, runScenario, SkipScenario } from '../lib/scenario.ts';

const DEADLINE_MS = 30_000;

runScenario('cluster', async (ctx) => {
  const n = ctx.quick ? 10 : 100;
  const rounds = ctx.quick ? 1 : 3;
  if (!installed('redis-server')) {
    throw new SkipScenario('redis-server is not installed');
  }
  const redis = await startRedisServer();
  ctx.defer(() => redis.stop());
  const brokers: Worker[] = [];
  ctx.defer(async () => {
    await Promise.all(brokers.map((b) => b.stop(10_000)));
  });
  const ports: number[] = [];
  for (let i = 0; i < 2; i += 1) {
    const broker = startWorker('bench/workers/broker.ts', [String(n), redis.url]);
    brokers.push(broker);
    ports.push((await broker.next<WorkerMessage & { port: number }>('ready', 30_000)).port);
  }
  const fleet = await startFleet({
    count: n,
    devicePort: ports[0]!,
    controllerPort: ports[1]!,
    anonymous: false,
    hosts: 1,
  });
  ctx.defer(() => fleet.stop());
  ctx.log(`N=${n}: registers on instance A up and seen on instance B in ${Math.round(fleet.startupMs)} ms`);
  await mqttFanout(fleet.controller, FANOUT_SCRIPT, DEADLINE_MS); // warm-up
  const times: number[] = [];
  let finishedMin = n;
  let other = '';
  for (let i = 0; i < rounds; i += 1) {
    const run = await mqttFanout(fleet.controller, FANOUT_SCRIPT, DEADLINE_MS);
    times.push(run.ms);
    if (run.finished < finishedMin) {
      finishedMin = run.finished;
      other = run.other;
    }
  }
  ctx.log(
    `N=${n} cluster: ${times.map((t) => t.toFixed(0)).join(', ')} ms; fewest FINISHED ${finishedMin}/${n} ${other}`,
  );
  ctx.report({
    figure: `N=${n} via 2 aedes instances + Redis: time to last FINISHED`,
    value: round(median(times), 0),
    unit: 'ms',
    goal: `all ${n} FINISHED (no time goal)`,
    met: finishedMin === n,
    note: `median of ${rounds}; devices on instance A, controller on B; fewest FINISHED ${finishedMin}/${n}${finishedMin < n ? ` (${other})` : ''}`,
  });
  ctx.report({
    figure: `N=${n} cluster start-up (not in the figure above)`,
    value: round(fleet.startupMs, 0),
    unit: 'ms',
  });
});
