/**
 * Runs one device: task engine, executor, REST app, and (unless --no-mqtt) the MQTT bridge,
 * either to an external broker (--mqtt-url) or to an embedded store broker (--broker-port).
 * `buildApp` never listens; this runner owns listening and the order of start and stop. The CLI
 * (`serve`), the demo, the benchmarks and the tests all start devices through it.
 */

import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { DeviceBridge } from '../bridge/device-bridge.ts';
import { type BrokerUser, StoreBroker } from '../broker/store-broker.ts';
import { buildApp } from '../src/app.ts';
import { createExecutor } from '../src/executors/index.ts';
import type { MqttHealth } from '../src/health.ts';
import type { Logger } from '../src/logger.ts';
import { createMetricsRegistry } from '../src/metrics.ts';
import { TaskQueue } from '../src/tasks/task-queue.ts';
import { loadTlsFiles, readPem } from '../src/tls.ts';
import { VERSION } from '../src/version.ts';
import { brokerTlsOption } from './broker-tls-flags.ts';
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

function loopbackFor(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

export interface StartDeviceOptions {
  logger: Logger;
  /**
   * Ports that were defaulted rather than asked for: when taken (e.g. 1883 by a system
   * Mosquitto), listen on a free port instead and say so, so `npm start` works anywhere. A port
   * given explicitly that is taken stays an error naming its flag.
   */
  freePortIfTaken?: { http?: boolean; broker?: boolean };
}

function isPortTaken(error: unknown): boolean {
  // Both fastify's listen error and BrokerListenError carry the errno code.
  return (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
}

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
  let broker: StoreBroker | undefined;
  let bridge: DeviceBridge | undefined;
  let app: FastifyInstance | undefined;
  const portFallbacks: string[] = [];
  let queueStarted = false;
  let bridgeStarted = false;
  let brokerStarted = false;
  let appBuilt = false;
  // Stop order: no new REST requests, then the running script is aborted (its FAILURE is still
  // mirrored), then the bridge publishes the offline state while the broker still runs.
  const stop = async (): Promise<void> => {
    const steps: Array<[boolean, () => Promise<void> | undefined]> = [
      [appBuilt, () => app?.close()],
      [queueStarted, () => queue.stop()],
      [bridgeStarted, () => bridge?.stop()],
      [brokerStarted, () => broker?.stop()],
    ];
    appBuilt = queueStarted = bridgeStarted = brokerStarted = false;
    for (const [active, step] of steps) {
      if (!active) continue;
      try {
        await step();
      } catch (error) {
        logger.error({ err: error }, 'error while stopping');
      }
    }
  };
  try {
    queue.start();
    queueStarted = true;

    let bridgeConnection: { url: string; username?: string; password?: string } | undefined;
    if (config.mqtt && !config.mqttUrl) {
      // README "Command line": every --user may also connect to the embedded broker as a controller;
      // the device's own bridge gets a random credential of role `device`, never printed.
      const devicePassword = randomBytes(24).toString('base64url');
      const users: BrokerUser[] = [
        ...config.users.map((u) => ({ name: u.name, password: u.password, role: 'controller' as const })),
        { name: config.deviceId, password: devicePassword, role: 'device' },
      ];
      // The embedded broker's TLS listener answers with the device's own certificate: one host,
      // one identity (docs/decisions.md, "TLS of the embedded broker").
      const tls =
        config.brokerTlsPort === undefined
          ? undefined
          : brokerTlsOption({
              tlsCert: config.tlsCert,
              tlsKey: config.tlsKey,
              port: config.brokerTlsPort,
              clientCa: config.brokerClientCa,
              portFlag: '--broker-tls-port',
            });
      const newBroker = (port: number): StoreBroker =>
        new StoreBroker({
          port,
          host: config.brokerHost,
          ...(config.brokerWsPort !== undefined && { wsPort: config.brokerWsPort }),
          ns: config.ns,
          users,
          logger: logger.child({ component: 'broker' }),
          portFlag: '--broker-port',
          wsPortFlag: '--broker-ws-port',
          ...(tls && { tls }),
          limits: {
            maxPacketBytes: config.brokerMaxPacketBytes,
            connectTimeoutMs: config.brokerConnectTimeout,
            maxConnections: config.brokerMaxConnections,
            // One login limit per process: REST and the embedded broker count separately.
            loginMaxFailures: config.authMaxFailures,
            loginWindowMs: config.authWindow,
          },
        });
      broker = newBroker(config.brokerPort);
      try {
        await broker.start();
      } catch (error) {
        const port = (error as { port?: number }).port;
        if (!deps.freePortIfTaken?.broker || !isPortTaken(error) || port !== config.brokerPort) throw error;
        logger.warn(
          { port: config.brokerPort },
          'default MQTT port taken; the embedded broker listens on a free port',
        );
        await broker.stop();
        broker = newBroker(0);
        await broker.start();
        portFallbacks.push(`MQTT port ${config.brokerPort} was taken (pass --broker-port to choose one)`);
      }
      brokerStarted = true;
      bridgeConnection = {
        url: `mqtt://${loopbackFor(config.brokerHost)}:${broker.port}`,
        username: config.deviceId,
        password: devicePassword,
      };
    } else if (config.mqtt && config.mqttUrl) {
      bridgeConnection = { url: config.mqttUrl };
    }

    if (bridgeConnection) {
      bridge = new DeviceBridge({
        ...bridgeConnection,
        ns: config.ns,
        deviceId: config.deviceId,
        groups: config.groups,
        installation: config.installation,
        version: VERSION,
        queue,
        registry,
        logger,
        ...(config.mqttCa !== undefined && { ca: readPem(config.mqttCa) }),
        ...(config.mqttCert !== undefined &&
          config.mqttKey !== undefined && { cert: readPem(config.mqttCert), key: readPem(config.mqttKey) }),
        protocolVersion: bridgeProtocol(config.mqttProtocol, bridgeConnection.url === config.mqttUrl),
        maxStatusesInFlight: config.mqttMaxInflight,
      });
    }
    const mqttHealth = (): MqttHealth => bridge?.health() ?? { state: 'disabled' };
    const tls = loadTlsFiles(config.tlsCert, config.tlsKey);
    const builtApp = await buildApp({ config, queue, logger, registry, mqttHealth, ...(tls && { tls }) });
    app = builtApp;
    appBuilt = true;
    try {
      try {
        await builtApp.listen({ port: config.port, host: config.host });
      } catch (error) {
        if (!deps.freePortIfTaken?.http || !isPortTaken(error)) throw error;
        logger.warn({ port: config.port }, 'default HTTP port taken; listening on a free port');
        await builtApp.listen({ port: 0, host: config.host });
        portFallbacks.push(`HTTP port ${config.port} was taken (pass --port to choose one)`);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new ListenError(
          `HTTP port ${config.port} on ${config.host} is already in use: choose another with --port (0 picks a free one)`,
        );
      }
      throw error;
    }
    if (bridge) {
      bridgeStarted = true;
      await bridge.start();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const listening = app as FastifyInstance;
  const address = listening.server.address();
  const httpPort = typeof address === 'object' && address ? address.port : config.port;
  return {
    config,
    queue,
    app: listening,
    registry,
    bridge,
    broker,
    httpPort,
    brokerPort: broker?.port,
    brokerWsPort: broker?.wsPort,
    brokerTlsPort: broker?.tlsPort,
    portFallbacks,
    stop,
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
