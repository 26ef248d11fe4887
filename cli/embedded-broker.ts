/**
 * The store broker `serve` embeds (docs/broker.md, "Embedded in serve"): every --user may connect
 * as a controller, the device's own bridge with a random `device` credential never printed; its
 * TLS listener answers with the device's own certificate (docs/decisions/embedded-broker-tls.md); one login limit per process, REST and the broker counting separately.
 */
import { randomBytes } from 'node:crypto';
import { type BrokerUser, StoreBroker } from '../broker/store-broker.ts';
import type { Logger } from '../src/logger.ts';
import { brokerTlsOption } from './broker-tls-flags.ts';
import type { ServeConfig } from './serve-config.ts';

export interface EmbeddedBroker {
  /** Builds the broker for `port` (the configured one, or 0 when it was taken). */
  build(port: number): StoreBroker;
  /** The bridge's login on it. */
  deviceUser: { username: string; password: string };
}

export function embeddedBroker(config: ServeConfig, logger: Logger): EmbeddedBroker {
  const devicePassword = randomBytes(24).toString('base64url');
  const users: BrokerUser[] = [
    ...config.users.map((u) => ({ name: u.name, password: u.password, role: 'controller' as const })),
    { name: config.deviceId, password: devicePassword, role: 'device' },
  ];
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
  return {
    deviceUser: { username: config.deviceId, password: devicePassword },
    build: (port) =>
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
          maxPendingPerAddress: config.brokerMaxPendingPerAddress,
          // Contract 6.1: this device's own --retain + --max-queue + 16.
          maxRetainedStatuses: config.retain + config.maxQueue + 16,
          maxReportBytes: config.outputCap,
          maxSessionInflight: config.brokerMaxSessionInflight,
          loginMaxFailures: config.authMaxFailures,
          loginWindowMs: config.authWindow,
        },
      }),
  };
}
