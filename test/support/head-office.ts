/**
 * A head office for the dashboard suites (docs/controller.md, "Many stores"): store brokers with
 * real registers carrying attributes (whole devices), bridged into a Mosquitto hub with the
 * bridges' link notifications, and the controller service for `stores/+` on the hub, listening
 * on a free port. Each register can be stopped on its own (a store going silent).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StoreBroker } from '../../broker/store-broker.ts';
import { type RunningControllerService, startControllerService } from '../../cli/controller-service.ts';
import type { UserInput } from '../../controller/users.ts';
import { startTestDevice, type TestDevice } from './bridge-device.ts';
import { type RunningProgramBroker, startMosquitto } from './broker-programs.ts';
import type { RunningBroker } from './brokers.ts';
import { ADMIN, login } from './controller-service.ts';
import { brokerLogger, silent } from './loggers.ts';
import { until } from './waits.ts';

const BRIDGE = { name: 'hq-bridge', password: 'bridge-secret' };
const DEVICE_PASSWORD = 'reg-secret';

export interface HeadOfficeRegister {
  id: string;
  groups: string[];
  /** `name=value`, as `serve --attribute` takes them. */
  attributes: string[];
}

export interface HeadOffice {
  service: RunningControllerService;
  token: string;
  hub: RunningProgramBroker;
  /** `store/id` -> the register. */
  devices: Map<string, TestDevice>;
  brokers: Map<string, StoreBroker>;
  /** Stops the controller service and starts it again on the same history (a restart). */
  restartService(): Promise<void>;
  stop(): Promise<void>;
}

export interface HeadOfficeOptions {
  /** Controller users besides ADMIN (operators with store scopes). */
  users?: UserInput[];
}

function bridgeLines(store: string, port: number): string[] {
  const ns = `stores/${store}`;
  return [
    `connection store-${store}`,
    `address 127.0.0.1:${port}`,
    `remote_username ${BRIDGE.name}`,
    `remote_password ${BRIDGE.password}`,
    `remote_clientid hq-bridge-${store}`,
    'bridge_protocol_version mqttv311',
    'try_private true',
    // The hub says on the store's namespace whether its link to the store is up (1) or not (0).
    'notifications true',
    'notifications_local_only true',
    `notification_topic ${ns}/link/state`,
    'cleansession false',
    `topic ${ns}/devices/+/state in 1`,
    `topic ${ns}/devices/+/tasks/+/status in 1`,
    `topic ${ns}/devices/+/replies/# in 1`,
    `topic ${ns}/devices/+/scripts out 1`,
    `topic ${ns}/groups/+/scripts out 1`,
    `topic ${ns}/devices/+/cancel out 1`,
    `topic ${ns}/groups/+/cancel out 1`,
  ];
}

function asRunning(broker: StoreBroker): RunningBroker {
  const url = `mqtt://127.0.0.1:${broker.port}`;
  return {
    url,
    controllerUrl: url,
    controllerCreds: {},
    deviceCreds: (deviceId) => ({ username: deviceId, password: DEVICE_PASSWORD }),
    stop: () => broker.stop(),
  };
}

/** Starts every store of `stores` (store -> registers), the hub and the controller service. */
export async function startHeadOffice(
  stores: Record<string, HeadOfficeRegister[]>,
  options: HeadOfficeOptions = {},
): Promise<HeadOffice> {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-head-office-'));
  const brokers = new Map<string, StoreBroker>();
  const devices = new Map<string, TestDevice>();
  let hub: RunningProgramBroker | undefined;
  let service: RunningControllerService | undefined;
  const stop = async (): Promise<void> => {
    await service?.stop();
    await Promise.allSettled([...devices.values()].map((d) => d.stop()));
    await hub?.stop();
    await Promise.allSettled([...brokers.values()].map((b) => b.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const config: string[] = [];
    for (const [store, registers] of Object.entries(stores)) {
      const broker = new StoreBroker({
        port: 0,
        host: '127.0.0.1',
        ns: `stores/${store}`,
        users: [
          { name: BRIDGE.name, password: BRIDGE.password, role: 'controller' },
          ...registers.map((r) => ({ name: r.id, password: DEVICE_PASSWORD, role: 'device' as const })),
        ],
        logger: brokerLogger,
      });
      await broker.start();
      brokers.set(store, broker);
      config.push(...bridgeLines(store, broker.port));
      for (const register of registers) {
        devices.set(
          `${store}/${register.id}`,
          await startTestDevice(asRunning(broker), {
            ns: `stores/${store}`,
            deviceId: register.id,
            groups: register.groups,
            attributes: register.attributes,
          }),
        );
      }
    }
    hub = await startMosquitto({ config });
    const hubUrl = hub.url;
    const startService = (): Promise<RunningControllerService> =>
      startControllerService(
        {
          port: 0,
          host: '127.0.0.1',
          mqttUrl: hubUrl,
          brokerHost: '127.0.0.1',
          brokerUsers: [],
          ns: 'stores/+',
          users: [ADMIN, ...(options.users ?? [])],
          db: join(dir, 'history.db'),
          storeLinkTopic: 'link/state',
          tokenTtl: 3600,
          settleMs: 100,
        },
        { logger: silent },
      );
    service = await startService();
    const running = service;
    const storeCount = Object.keys(stores).length;
    await until(
      () =>
        running.controller.devices().filter((d) => d.online).length === devices.size &&
        [...running.controller.storeLinks().values()].filter((link) => link.up).length === storeCount,
      'every register online and every store link up at the head office',
      30_000,
    );
    const office: HeadOffice = {
      service: running,
      token: await login(running.app),
      hub,
      devices,
      brokers,
      restartService: async () => {
        await service?.stop();
        service = undefined;
        service = await startService();
        office.service = service;
        office.token = await login(service.app);
      },
      stop,
    };
    return office;
  } catch (error) {
    await stop();
    throw error;
  }
}
