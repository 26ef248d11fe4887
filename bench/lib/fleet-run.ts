/**
 * Starting a fleet of registers for the fan-out scenarios: device-host workers connected to a
 * broker, and a store controller connected to (maybe another) broker, waiting until the
 * controller sees every register online. Start-up is timed apart from the fan-out figures.
 */
import { StoreController } from '../../controller/store-controller.ts';
import { summarize } from '../../controller/types.ts';
import { silent } from '../../test/support/loggers.ts';
import { until } from '../../test/support/waits.ts';
import { CONTROLLER_PASSWORD, CONTROLLER_USER, NS, ranges } from './fleet.ts';
import { startWorker, type Worker, type WorkerMessage } from './proc.ts';
import { sleep } from './scenario.ts';

const SETTLE_MS = 2000;

export interface FleetDevice {
  deviceId: string;
  httpPort: number;
}

export interface Fleet {
  devices: FleetDevice[];
  /** Wall time from starting the hosts to the controller seeing every register online. */
  startupMs: number;
  /** Sum of the hosts' RSS after start, bytes. */
  rss: number;
  controller: StoreController;
  stop(): Promise<void>;
}

interface HostReady extends WorkerMessage {
  devices: FleetDevice[];
  rss: number;
}

export async function startFleet(options: {
  count: number;
  /** Where the registers connect. */
  devicePort: number;
  /** Where the controller connects (another cluster instance, or the same broker). */
  controllerPort: number;
  anonymous: boolean;
  hosts: number;
}): Promise<Fleet> {
  const started = performance.now();
  const hosts: Worker[] = [];
  let controller: StoreController | undefined;
  const stop = async (): Promise<void> => {
    await controller?.stop();
    await Promise.all(hosts.map((h) => h.stop(20_000)));
  };
  try {
    for (const [from, to] of ranges(options.count, options.hosts)) {
      const args = [String(from), String(to), '127.0.0.1', String(options.devicePort)];
      if (options.anonymous) args.push('anonymous');
      hosts.push(startWorker('bench/workers/device-host.ts', args));
    }
    const ready = await Promise.all(hosts.map((h) => h.next<HostReady>('ready', 180_000)));
    controller = new StoreController({
      url: `mqtt://127.0.0.1:${options.controllerPort}`,
      username: CONTROLLER_USER,
      password: CONTROLLER_PASSWORD,
      ns: NS,
      logger: silent,
    });
    await controller.start();
    const c = controller;
    await until(
      () => c.devices().filter((d) => d.online).length >= options.count,
      `${options.count} registers online at the controller`,
      60_000,
      20,
    );
    const startupMs = performance.now() - started;
    // Each bridge sweeps its stale status topics for about a second after connecting (it is
    // subscribed to its own statuses meanwhile): measure the steady state after that.
    await sleep(SETTLE_MS);
    return {
      devices: ready.flatMap((r) => r.devices),
      startupMs,
      rss: ready.reduce((n, r) => n + r.rss, 0),
      controller: c,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** One fan-out through the controller: wall time to the last result, and how many FINISHED. */
export async function mqttFanout(
  controller: StoreController,
  script: string,
  deadlineMs: number,
): Promise<{ ms: number; finished: number; other: string }> {
  const started = performance.now();
  const results = await controller.submit(script, { to: 'all', deadlineMs });
  const ms = performance.now() - started;
  const summary = summarize(results);
  return {
    ms,
    finished: summary.finished,
    other: `${summary.failed} failed, ${summary.offline} offline, ${summary.noAnswer} no answer`,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
