/**
 * The task engine's CPU per task without HTTP, for profiling by hand and for before/after
 * comparisons of the per-task path (docs/benchmarks.md, "Issue 14", point 1): N `PRINT x` submitted in
 * batches of 10 (as 10 connections would), executed by the simulator with the device's metrics
 * on, retain 128. Prints µs of CPU per task (median of 5 runs of N).
 *   node bin/run-ts.js bench/task-engine-cost.ts [N=100000]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof bin/run-ts.js bench/task-engine-cost.ts
 */
import { createExecutor } from '../src/executors/index.ts';
import { createDeviceMetrics, createMetricsRegistry } from '../src/metrics.ts';
import { TaskQueue } from '../src/tasks/task-queue.ts';
import { silent as silentLogger } from '../test/support/loggers.ts';

const n = Number(process.argv[2] ?? 100_000);
const queue = new TaskQueue({
  executor: createExecutor({ executor: 'simulator', scriptTimeout: 120_000, outputCap: 1 << 20 } as never, {
    logger: silentLogger,
  }),
  retain: 128,
  maxQueue: 10_000_000,
});
createDeviceMetrics(createMetricsRegistry('cost'), queue);
queue.start();

async function drained(): Promise<void> {
  while (queue.queuedCount > 0 || queue.runningTask !== undefined) await new Promise((r) => setImmediate(r));
}

const results: number[] = [];
for (let run = 0; run < 6; run += 1) {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i += 10) {
    for (let j = 0; j < 10; j += 1)
      queue.submit('PRINT x', { source: 'rest', subject: "body field 'vendorScript'" });
    await new Promise((r) => setImmediate(r));
  }
  await drained();
  const cpu = process.cpuUsage(before);
  if (run > 0) results.push((cpu.user + cpu.system) / n); // the first run warms up
}
results.sort((a, b) => a - b);
console.log(
  `${n} tasks x5: ${results.map((r) => r.toFixed(2)).join(' ')} µs/task; median ${results[2]!.toFixed(2)}`,
);
await queue.stop();
