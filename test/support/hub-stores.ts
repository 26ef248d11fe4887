/**
 * A store as `regbridge store-config` lays it out (docs/topology.md, "Add a store"): its
 * Mosquitto store broker running the generated mosquitto.conf, bridged to the hub through one
 * simulated WAN link per hub node (wan-link.ts), and its registers (whole devices: REST, queue,
 * simulator, bridge) started with the generated settings. Each register counts what its queue
 * started and the tasks queued per requestId, so a suite can prove nothing ran twice.
 */
import { pino } from 'pino';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { storeConfig } from '../../cli/store-config.ts';
import { type RunningProgramBroker, startMosquittoWith } from './broker-programs.ts';
import { startWanLink, type WanLink } from './wan-link.ts';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export interface StoreRegister {
  id: string;
  device: RunningDevice;
  /** Task id -> how many times the queue started it. */
  started: Map<number, number>;
  /** requestId -> task ids queued for it (one per requestId: idempotency). */
  requests: Map<string, number[]>;
  /** requestIds whose task ended FINISHED here. */
  finished: Set<string>;
}

export interface TestStore {
  id: string;
  ns: string;
  broker: RunningProgramBroker;
  /** One per hub node, in the generated `address` order. */
  links: WanLink[];
  registers: StoreRegister[];
  /** The generated mosquitto.conf (with the test's ports). */
  conf: string;
  /** The WAN link down (every node unreachable) or back. */
  cutWan(): void;
  restoreWan(): void;
  stop(): Promise<void>;
}

/**
 * Store `id` with `registers` registers bridged to the hub nodes `hub` (`host:port` of their MQTT
 * listeners); `first` rotates the address list so stores spread over the nodes.
 */
export async function startStore(
  id: string,
  hub: readonly string[],
  options: { registers: number; first?: number },
): Promise<TestStore> {
  const links: WanLink[] = [];
  for (const address of hub) {
    const at = address.lastIndexOf(':');
    links.push(await startWanLink(Number(address.slice(at + 1)), address.slice(0, at)));
  }
  const first = options.first ?? 0;
  const order = links.map((_, i) => links[(first + i) % links.length] as WanLink);
  let generated: ReturnType<typeof storeConfig> | undefined;
  const broker = await startMosquittoWith((port) => {
    generated = storeConfig({
      store: id,
      nsPrefix: 'stores',
      hub: order.map((l) => l.address),
      listen: `127.0.0.1:${port}`,
      storeHost: '127.0.0.1',
      registers: Array.from({ length: options.registers }, (_, i) => `reg-${i + 1}`),
      wanQueue: 1_000_000,
    });
    return generated.mosquittoConf;
  });
  if (!generated) throw new Error('no configuration generated');
  const config = generated;
  const registers = await Promise.all(
    config.registers.map(async (r) => {
      // Exactly the generated environment (REGBRIDGE_NS, _DEVICE_ID, _MQTT_URL, _MQTT_PROTOCOL).
      const device = await startDevice(
        parseServeConfig({
          port: 0,
          host: '127.0.0.1',
          auth: 'off',
          logLevel: 'silent',
          ns: r.env.REGBRIDGE_NS,
          deviceId: r.env.REGBRIDGE_DEVICE_ID,
          mqttUrl: r.env.REGBRIDGE_MQTT_URL,
          mqttProtocol: r.env.REGBRIDGE_MQTT_PROTOCOL,
        }),
        { logger: silent },
      );
      const entry: StoreRegister = {
        id: r.id,
        device,
        started: new Map(),
        requests: new Map(),
        finished: new Set(),
      };
      device.queue.on('started', (task) => entry.started.set(task.id, (entry.started.get(task.id) ?? 0) + 1));
      device.queue.on('queued', (task) => {
        if (task.requestId === undefined) return;
        entry.requests.set(task.requestId, [...(entry.requests.get(task.requestId) ?? []), task.id]);
      });
      device.queue.on('finished', (task) => {
        if (task.requestId !== undefined) entry.finished.add(task.requestId);
      });
      return entry;
    }),
  );
  return {
    id,
    ns: config.ns,
    broker,
    links,
    registers,
    conf: config.mosquittoConf,
    cutWan: () => {
      for (const link of links) link.cut();
    },
    restoreWan: () => {
      for (const link of links) link.restore();
    },
    async stop() {
      await Promise.allSettled(registers.map((r) => r.device.stop()));
      await broker.stop();
      await Promise.allSettled(links.map((l) => l.close()));
    },
  };
}

/** Every register of `stores` ran the task of each requestId once: one task, started once. */
export function executions(stores: readonly TestStore[], requestId: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const store of stores) {
    for (const r of store.registers) {
      const tasks = r.requests.get(requestId) ?? [];
      counts[`${store.id}/${r.id}`] = tasks.reduce((sum, task) => sum + (r.started.get(task) ?? 0), 0);
    }
  }
  return counts;
}
