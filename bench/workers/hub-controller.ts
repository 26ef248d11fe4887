/**
 * The head office's controller for the head-office scenario, in a process of its own so its CPU
 * time and RSS are its own: a StoreController for every store (`ns: 'stores/+'`) on the hub.
 * argv: `<url,url,url> <registers expected>`. Sends `ready` once every register is online. On
 * `{type: 'job', deadlineMs}` it sends one script to every register (group `all` of every store)
 * and answers `progress` once a tenth of the results are in, then `{type: 'done', ms, finished, other, cpuMs, rss, rssPeak, reasked, missed}`.
 */
import { performance } from 'node:perf_hooks';
import { StoreController } from '../../controller/store-controller.ts';
import { summarize } from '../../controller/types.ts';
import { silent } from '../../test/support/loggers.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [urls = '', expected = '0'] = process.argv.slice(2);
let controller: StoreController | undefined;
let reasked = 0;
let jobs = 0;

async function job(deadlineMs: number): Promise<void> {
  const c = controller!;
  jobs += 1;
  let rssPeak = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  }, 50);
  const reaskedBefore = reasked;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const results = await c.submit('PRINT price file 42', {
      to: 'all',
      deadlineMs,
      requestId: `price-42-${process.pid}-${jobs}`,
      // A tenth of the results in: the job is under way (the scenario kills a node then).
      onResult: (_result, { done, total }) => {
        if (done === Math.ceil(total / 10)) sendToParent({ type: 'progress', done, total });
      },
    });
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const summary = summarize(results);
    sendToParent({
      type: 'done',
      ms,
      total: results.length,
      finished: summary.finished,
      other: `${summary.failed} failed, ${summary.offline} offline, ${summary.noAnswer} no answer`,
      cpuMs: (cpu.user + cpu.system) / 1000,
      rss: process.memoryUsage.rss(),
      rssPeak: Math.max(rssPeak, process.memoryUsage.rss()),
      reasked: reasked - reaskedBefore,
      missed: results.filter((r) => r.status !== 'FINISHED').slice(0, 5),
    });
  } finally {
    clearInterval(sampler);
  }
}

workerMain(
  async () => {
    const t0 = performance.now();
    controller = new StoreController({
      url: urls.split(','),
      ns: 'stores/+',
      logger: silent,
      settleMs: 500,
      maxSettleMs: 60_000,
      connectTimeoutMs: 60_000,
    });
    controller.on('reasked', (n) => {
      reasked += n;
    });
    await controller.start();
    const c = controller;
    const want = Number(expected);
    const deadline = Date.now() + 300_000;
    while (c.devices().filter((d) => d.online).length < want) {
      if (Date.now() > deadline)
        throw new Error(`${c.devices().filter((d) => d.online).length}/${want} registers online after 300 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    sendToParent({ type: 'ready', ms: performance.now() - t0 });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'job') await job(Number(message.deadlineMs));
    },
    onStop: () => controller?.stop(),
  },
);
