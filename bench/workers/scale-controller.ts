/**
 * The store controller of the scale scenarios in a process of its own, so its CPU time and RSS
 * are its own (and `--cpu-prof` profiles it alone). argv: `<brokerPort> <registers>
 * <anonymous|users>`. Starts a StoreController, waits until every register is online, then sends
 * `{type: 'ready', startupMs}`. On `{type: 'fanout', script, deadlineMs, stamp}` it sends the
 * script to group `all` and answers `{type: 'fanned', ms, finished, other, cpuUserMs, cpuSystemMs,
 * rss, rssPeak, heapUsed, elu, received}`; with `stamp`, also `stamps`: `[deviceId, taskId, t]`
 * for each FINISHED status as the controller's `status` event delivered it (lib/scenario.ts's
 * nowMs()). Answers `ping` with `pong` (lib/clock.ts).
 */
import { performance } from 'node:perf_hooks';
import { StoreController } from '../../controller/store-controller.ts';
import { summarize } from '../../controller/types.ts';
import { silent as silentLogger } from '../../test/support/loggers.ts';
import { CONTROLLER_PASSWORD, CONTROLLER_USER, NS } from '../lib/fleet.ts';
import { nowMs, sleep } from '../lib/scenario.ts';
import { startWindowProfile, stopWindowProfile } from '../lib/window-profile.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [brokerPort = '1883', count = '0', auth = 'users'] = process.argv.slice(2);
let controller: StoreController | undefined;
let messages = 0;

async function fanout(script: string, deadlineMs: number, stamp: boolean): Promise<void> {
  const c = controller!;
  const stamps: Array<[string, number, number]> = [];
  const onStatus = (view: { deviceId: string; id: number; status: string }): void => {
    messages += 1;
    if (stamp && view.status === 'FINISHED') stamps.push([view.deviceId, view.id, nowMs()]);
  };
  c.on('status', onStatus);
  let rssPeak = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  }, 50);
  const receivedBefore = messages;
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const results = await c.submit(script, { to: 'all', deadlineMs });
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const elu = performance.eventLoopUtilization(elu0);
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    const summary = summarize(results);
    sendToParent({
      type: 'fanned',
      ms,
      finished: summary.finished,
      other: `${summary.failed} failed, ${summary.offline} offline, ${summary.noAnswer} no answer`,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
      rss: process.memoryUsage.rss(),
      rssPeak,
      heapUsed: process.memoryUsage().heapUsed,
      elu: elu.utilization,
      received: messages - receivedBefore,
      // The first few registers without FINISHED, with the controller's reason (to find out why).
      missed: results.filter((r) => r.status !== 'FINISHED').slice(0, 5),
      ...(stamp && { stamps }),
    });
  } finally {
    clearInterval(sampler);
    c.off('status', onStatus);
  }
}

workerMain(
  async () => {
    const started = performance.now();
    // A broker still busy accepting thousands of registers (nats-server creates a JetStream
    // session for each) may close a connection before its CONNACK: try again for a while.
    const giveUp = Date.now() + 300_000;
    for (;;) {
      controller = new StoreController({
        url: `mqtt://127.0.0.1:${brokerPort}`,
        ...(auth === 'users' && { username: CONTROLLER_USER, password: CONTROLLER_PASSWORD }),
        ns: NS,
        logger: silentLogger,
        maxSettleMs: 30_000,
        connectTimeoutMs: 60_000,
      });
      try {
        await controller.start();
        break;
      } catch (error) {
        if (Date.now() > giveUp) throw error;
        await sleep(2000);
      }
    }
    const c = controller;
    const deadline = Date.now() + 300_000;
    const online = (): number => c.devices().filter((d) => d.online).length;
    while (online() < Number(count)) {
      if (Date.now() > deadline) throw new Error(`only ${online()}/${count} registers online`);
      await sleep(100);
    }
    sendToParent({ type: 'ready', startupMs: performance.now() - started, rss: process.memoryUsage.rss() });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'ping') sendToParent({ type: 'pong', t0: message.t0, t1: nowMs() });
      else if (message.type === 'profile-start')
        await startWindowProfile().then(() => sendToParent({ type: 'profiling' }));
      else if (message.type === 'profile-stop')
        await stopWindowProfile(String(message.file)).then(() => sendToParent({ type: 'profiled' }));
      else if (message.type === 'fanout')
        await fanout(String(message.script), Number(message.deadlineMs), message.stamp === true);
    },
    onStop: async () => {
      await controller?.stop();
    },
  },
);
