/**
 * Runs one device: task engine, executor, REST app, and (unless --no-mqtt) the MQTT bridge,
 * either to an external broker (--mqtt-url) or to an embedded store broker (--broker-port).
 * `buildApp` never listens; this runner owns listening and the order of start and stop. The CLI
 * (`serve`), the demo, the benchmarks and the tests all start devices through it.
 */

import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { DeviceBridge } from '../bridge/device-bridge.ts';
import type { StoreBroker } from '../broker/store-broker.ts';
import { buildApp } from '../src/app.ts';
import { createExecutor } from '../src/executors/index.ts';
import type { MqttHealth } from '../src/health.ts';
import { closeHttpApp } from '../src/http-close.ts';
import type { Logger } from '../src/logger.ts';
import { createMetricsRegistry } from '../src/metrics.ts';
import { TaskQueue } from '../src/tasks/task-queue.ts';
import { loadTlsFiles, readPem } from '../src/tls.ts';
import { VERSION } from '../src/version.ts';
import { type Component, ComponentList, listenOrFreePort } from './components.ts';
import { embeddedBroker } from './embedded-broker.ts';
import { loopbackFor } from './options.ts';
import type { ServeConfig } from './serve-config.ts';

export interface RunningDevice {
  readonly config: ServeConfig;
  readonly queue: TaskQueue;
  readonly app: FastifyInstance;
  readonly registry: Registry;
  readonly bridge: DeviceBridge | undefined;
  readonly broker: StoreBroker | undefined;
  readonly httpPort: number;
  readonly brokerPort: number | undefined;
  readonly brokerWsPort: number | undefined;
  /** MQTT over TLS of the embedded broker (--broker-tls-port), with serve's --tls-cert/--tls-key. */
  readonly brokerTlsPort: number | undefined;
  /** Defaulted ports that were taken and replaced by free ones (see StartDeviceOptions). */
  readonly portFallbacks: readonly string[];
  stop(): Promise<void>;
}

export class ListenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ListenError';
  }
}

export interface StartDeviceOptions {
  logger: Logger;
  /**
   * Ports defaulted rather than asked for: when taken, listen on a free one and say so, so
   * `npm start` works anywhere. A taken explicit port stays an error naming its flag.
   */
  freePortIfTaken?: { http?: boolean; broker?: boolean };
}

/**
 * The device is the ordered list of its components: the embedded store broker (if any), the
 * bridge, the task queue, the REST app. Start walks it in order, stop in reverse: no new REST
 * requests, then the running script is aborted (its FAILURE is still mirrored), then the bridge
 * publishes the offline state while the broker still runs (docs/decisions/device-components-order.md).
 */
export async function startDevice(config: ServeConfig, deps: StartDeviceOptions): Promise<RunningDevice> {
  const logger = deps.logger;
  const registry = createMetricsRegistry(config.deviceId);
  const queue = new TaskQueue({
    executor: createExecutor(config, { logger }),
    retain: config.retain,
    maxQueue: config.maxQueue,
    maxScriptBytes: config.maxScriptBytes,
    requestIdMemory: config.requestIdMemory,
  });
  const tls = loadTlsFiles(config.tlsCert, config.tlsKey);
  const portFallbacks: string[] = [];
  const components = new ComponentList(logger);
  try {
    // The embedded broker starts first: the bridge's URL carries the port it listens on.
    const broker =
      config.mqtt && !config.mqttUrl
        ? await startEmbeddedBroker(config, components, logger, deps, portFallbacks)
        : undefined;
    const bridge = config.mqtt
      ? new DeviceBridge({
          ...(broker
            ? {
                url: `mqtt://${loopbackFor(config.brokerHost)}:${broker.broker.port}`,
                ...broker.deviceUser,
              }
            : { url: config.mqttUrl! }),
          ns: config.ns,
          deviceId: config.deviceId,
          groups: config.groups,
          attributes: Object.fromEntries(config.attributes),
          installation: config.installation,
          version: VERSION,
          queue,
          registry,
          logger,
          ...(config.mqttCa !== undefined && { ca: readPem(config.mqttCa) }),
          ...(config.mqttCert !== undefined &&
            config.mqttKey !== undefined && { cert: readPem(config.mqttCert), key: readPem(config.mqttKey) }),
          protocolVersion: bridgeProtocol(config.mqttProtocol, broker === undefined),
          maxStatusesInFlight: config.mqttMaxInflight,
          reconnectMaxMs: config.mqttReconnectMax,
        })
      : undefined;
    const mqttHealth = (): MqttHealth => bridge?.health() ?? { state: 'disabled' };
    const app = await buildApp({ config, queue, logger, registry, mqttHealth, ...(tls && { tls }) });
    await components.start([
      ...(bridge ? [bridge] : []),
      queue,
      restApp(app, config, logger, deps, portFallbacks),
    ]);
    const address = app.server.address();
    return {
      config,
      queue,
      app,
      registry,
      bridge,
      broker: broker?.broker,
      httpPort: typeof address === 'object' && address ? address.port : config.port,
      brokerPort: broker?.broker.port,
      brokerWsPort: broker?.broker.wsPort,
      brokerTlsPort: broker?.broker.tlsPort,
      portFallbacks,
      stop: () => components.stop(),
    };
  } catch (error) {
    await components.stop();
    throw error;
  }
}

/** Starts the embedded store broker as the first component, on a free port if its default is taken. */
async function startEmbeddedBroker(
  config: ServeConfig,
  components: ComponentList,
  logger: Logger,
  deps: StartDeviceOptions,
  portFallbacks: string[],
): Promise<{ broker: StoreBroker; deviceUser: { username: string; password: string } }> {
  const embedded = embeddedBroker(config, logger);
  let broker: StoreBroker | undefined;
  await components.start([
    {
      name: 'store broker',
      start: () =>
        listenOrFreePort(
          config.brokerPort,
          async (port) => {
            broker = embedded.build(port);
            try {
              await broker.start();
            } catch (error) {
              await broker.stop();
              throw error;
            }
          },
          {
            freeIfTaken: deps.freePortIfTaken?.broker,
            logger,
            warning: 'default MQTT port taken; the embedded broker listens on a free port',
            said: {
              notes: portFallbacks,
              note: `MQTT port ${config.brokerPort} was taken (pass --broker-port to choose one)`,
            },
            taken: (error) => (error as { port?: number }).port === config.brokerPort,
          },
        ),
      stop: () => broker?.stop(),
    },
  ]);
  return { broker: broker!, deviceUser: embedded.deviceUser };
}

/** The REST app as the last component: listens (on a free port if its default is taken), closes. */
function restApp(
  app: FastifyInstance,
  config: ServeConfig,
  logger: Logger,
  deps: StartDeviceOptions,
  portFallbacks: string[],
): Component {
  return {
    name: 'REST app',
    async start() {
      try {
        await listenOrFreePort(
          config.port,
          async (port) => {
            await app.listen({ port, host: config.host });
          },
          {
            freeIfTaken: deps.freePortIfTaken?.http,
            logger,
            warning: 'default HTTP port taken; listening on a free port',
            said: {
              notes: portFallbacks,
              note: `HTTP port ${config.port} was taken (pass --port to choose one)`,
            },
          },
        );
      } catch (error) {
        await app.close();
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          throw new ListenError(
            `HTTP port ${config.port} on ${config.host} is already in use: choose another with --port (0 picks a free one)`,
          );
        }
        throw error;
      }
    },
    stop: () => closeHttpApp(app),
  };
}

/**
 * `--mqtt-protocol` as the bridge takes it. The embedded broker (aedes) speaks 3.1.1 only, so
 * `auto` uses 3.1.1 there at once instead of finding out with a refused connection.
 */
function bridgeProtocol(mode: 'auto' | '3.1.1' | '5', external: boolean): 4 | 5 | 'auto' {
  if (mode === '5') return 5;
  if (mode === '3.1.1' || !external) return 4;
  return 'auto';
}
