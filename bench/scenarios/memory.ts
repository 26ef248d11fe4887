/**
 * Scenario 4: heap and RSS after 1,000 and after 200,000 tasks (quick: 1,000 and 10,000)
 * through one device with MQTT on (embedded broker), and the retained topics the broker holds
 * for it. The device runs in a child process with --expose-gc, and gc() runs before each reading.
 */
import { startWorker, type WorkerMessage } from '../lib/proc.ts';
import { round, runScenario } from '../lib/scenario.ts';

interface Milestone extends WorkerMessage {
  tasks: number;
  heapUsed: number;
  rss: number;
  retained: number;
  retainedByKind?: Record<string, number>;
  held?: number;
  reconnects?: number;
  peakPending?: number;
  peakHeap?: number;
  brokerClientErrors?: number;
  failed?: number;
  elapsedMs: number;
}

const MiB = 2 ** 20;

runScenario('memory', async (ctx) => {
  const small = 1000;
  const large = ctx.quick ? 10_000 : 200_000;
  // Readings in between show the shape of any growth (flat, steady, a step at one moment).
  const steps = ctx.quick ? [small, 5_000, large] : [small, 50_000, 100_000, 150_000, large];
  const worker = startWorker('bench/workers/memory.ts', steps.map(String), { execArgv: ['--expose-gc'] });
  ctx.defer(() => worker.stop(10_000));
  const timeout = ctx.quick ? 60_000 : 280_000;
  const readings: Milestone[] = [];
  for (let i = 0; i <= steps.length; i += 1)
    readings.push(await worker.next<Milestone>('milestone', i === 0 ? 30_000 : timeout));
  await worker.next('done', 10_000);
  for (const m of readings) {
    ctx.log(
      `${m.tasks} tasks: heap ${(m.heapUsed / MiB).toFixed(1)} MiB, RSS ${(m.rss / MiB).toFixed(1)} MiB, ` +
        `retained ${m.retained} ${JSON.stringify(m.retainedByKind ?? {})}, held ${m.held ?? 0}, ` +
        `peak backlog ${m.peakPending ?? 0} unacknowledged publishes, peak heap ${((m.peakHeap ?? 0) / MiB).toFixed(0)} MiB, ` +
        `${m.failed ?? 0} failed, ${m.reconnects ?? 0} MQTT reconnects, ${m.brokerClientErrors ?? 0} broker client errors, ` +
        `${(m.elapsedMs / 1000).toFixed(1)} s`,
    );
  }
  const first = readings[1]!;
  const second = readings[readings.length - 1]!;
  const growth = (second.heapUsed - first.heapUsed) / MiB;
  const rate = (second.tasks - first.tasks) / ((second.elapsedMs - first.elapsedMs) / 1000);
  ctx.report({
    figure: `heap after ${first.tasks.toLocaleString('en-US')} tasks`,
    value: round(first.heapUsed / MiB, 1),
    unit: 'MiB',
  });
  ctx.report({
    figure: `heap after ${second.tasks.toLocaleString('en-US')} tasks`,
    value: round(second.heapUsed / MiB, 1),
    unit: 'MiB',
  });
  ctx.report({
    figure: `heap growth ${first.tasks.toLocaleString('en-US')} -> ${second.tasks.toLocaleString('en-US')} tasks`,
    value: round(growth, 2),
    unit: 'MiB',
    goal: '< 20 MB',
    met: growth * MiB < 20e6,
    note: `${ctx.quick ? 'quick run: 10k tasks, not 200k; ' : ''}${second.reconnects ?? 0} MQTT reconnects during the run`,
  });
  ctx.report({
    figure: `RSS after ${first.tasks.toLocaleString('en-US')} tasks`,
    value: round(first.rss / MiB, 1),
    unit: 'MiB',
  });
  ctx.report({
    figure: `RSS after ${second.tasks.toLocaleString('en-US')} tasks`,
    value: round(second.rss / MiB, 1),
    unit: 'MiB',
  });
  ctx.report({
    figure: 'retained topics per device on the broker',
    value: second.retained,
    unit: 'topics',
    goal: '<= retain (128) + 1 state',
    met: second.retained <= 129,
    note: JSON.stringify(second.retainedByKind ?? {}),
  });
  ctx.report({
    figure: 'bridge backlog peak while feeding (publishes not yet acknowledged)',
    value: second.peakPending ?? 0,
    unit: 'messages',
    note: `heap peak (no gc) ${((second.peakHeap ?? 0) / MiB).toFixed(0)} MiB: the bridge does not push back on the queue`,
  });
  ctx.report({
    figure: 'heap peak while feeding (no gc)',
    value: round((second.peakHeap ?? 0) / MiB, 1),
    unit: 'MiB',
  });
  ctx.report({
    figure: 'tasks/s while feeding (MQTT QoS 1, window 500)',
    value: round(rate, 0),
    unit: 'tasks/s',
  });
});
