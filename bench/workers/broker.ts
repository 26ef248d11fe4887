/**
 * A store broker (aedes, broker/store-broker.ts) in a process of its own, as `regbridge broker`
 * would run it. argv: `<registers> [redisUrl]`; users are lib/fleet.ts's. Sends `{type: 'ready', port}`.
 * Answers `ping` (lib/clock.ts) and, with BENCH_STAGES=1, `stages` (lib/broker-stages.ts).
 */
import { StoreBroker } from '../../broker/store-broker.ts';
import { silent } from '../../test/support/loggers.ts';
import { installStageStamps, takeStageStamps } from '../lib/broker-stages.ts';
import { fleetUsers, NS } from '../lib/fleet.ts';
import { nowMs } from '../lib/scenario.ts';
import { startWindowProfile, stopWindowProfile } from '../lib/window-profile.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [count = '0', redisUrl] = process.argv.slice(2);
let broker: StoreBroker | undefined;
// status-under-load.ts --stages: stamps of each FINISHED status inside the broker (bench only).
if (process.env.BENCH_STAGES === '1') installStageStamps();

workerMain(
  async () => {
    broker = new StoreBroker({
      port: 0,
      host: '127.0.0.1',
      ns: NS,
      users: fleetUsers(Number(count)),
      logger: silent,
      // Every register and the controller connect: raised above the default of 1,000 (fanout-scale
      // starts 1,000 registers), as `regbridge broker --max-connections` would be for a big store.
      limits: { maxConnections: Number(count) + 100 },
      ...(redisUrl && { redisUrl }),
    });
    await broker.start();
    sendToParent({ type: 'ready', port: broker.port });
  },
  {
    onMessage: async (message) => {
      if (message.type === 'ping') sendToParent({ type: 'pong', t0: message.t0, t1: nowMs() });
      else if (message.type === 'stages') sendToParent({ type: 'stages', ...takeStageStamps() });
      else if (message.type === 'stats')
        sendToParent({
          type: 'stats',
          ...broker?.stats,
          rss: process.memoryUsage().rss,
          // user + system CPU of this process in µs (finer than /proc's 10 ms ticks)
          cpuUs: process.cpuUsage().user + process.cpuUsage().system,
        });
      else if (message.type === 'profile-start')
        await startWindowProfile().then(() => sendToParent({ type: 'profiling' }));
      else if (message.type === 'profile-stop')
        await stopWindowProfile(String(message.file)).then(() => sendToParent({ type: 'profiled' }));
    },
    onStop: () => broker?.stop(),
  },
);
