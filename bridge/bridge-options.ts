/**
 * The options of DeviceBridge (bridge/device-bridge.ts re-exports this type) and their defaults,
 * in one place: the bridge's parts and the `serve` flags (cli/serve-config.ts) read them here.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { TaskQueue } from '../src/tasks/task-queue.ts';
import { RECONNECT_STABLE_MS } from './contract/reconnect-backoff.ts';

export interface DeviceBridgeOptions {
  /**
   * mqtt://, mqtts://, ws://; may carry user:pass (never logged). Several brokers, as a list or comma
   * separated, are failed over at every reconnect (docs/mqtt.md, "Several brokers"); a URL without
   * credentials uses the first URL's that has some.
   */
  url: string | readonly string[];
  /** PEM CA certificate(s) trusted for mqtts:// and wss:// brokers besides the system's (`--mqtt-ca`). */
  ca?: Buffer;
  /** Client certificate and key (`--mqtt-cert`, `--mqtt-key`): a store broker with device certificates logs the device in by its CN. */
  cert?: Buffer;
  key?: Buffer;
  /** Override the URLs' credentials (all of them). */
  username?: string;
  password?: string;
  /** Default 4 (MQTT 3.1.1); 'auto': 5 where the broker accepts it (protocol-negotiation.ts). */
  protocolVersion?: 4 | 5 | 'auto';
  ns: string;
  deviceId: string;
  /** Extra groups; group `all` is implicit. */
  groups: readonly string[];
  /** `--attribute KEY=VALUE` pairs, in the retained online state (contract/attributes.ts). */
  attributes?: Readonly<Record<string, string>>;
  installation: 'cash-register' | 'cash-register+pos' | 'pos';
  version: string;
  /** The task engine: it admits or refuses every script (size, idempotency, expiry, ...). */
  queue: TaskQueue;
  registry: Registry;
  logger: Logger;
  /** Default `regbridge_<ns>_<deviceId>` (stable, so the broker keeps the session). */
  clientId?: string;
  /** start() resolves after this long even if the broker is unreachable; retries go on. Default 5000. */
  startTimeoutMs?: number;
  /** The first retry's wait (default 1000 ms), doubled per failure up to `reconnectMaxMs`. */
  reconnectPeriodMs?: number;
  /** The longest wait between attempts (`--mqtt-reconnect-max`), default 30000 ms; 0: always `reconnectPeriodMs`, no jitter. */
  reconnectMaxMs?: number;
  /** A connection that lasts this long resets the backoff to the first wait; default 60000 ms. */
  reconnectStableMs?: number;
  /** Status and clear messages awaiting a PUBACK (default 1000); beyond, coalesced per task. */
  maxStatusesInFlight?: number;
  /**
   * Read retained end statuses back and republish what was lost (status-audit.ts). Default: on
   * with several broker URLs.
   */
  auditRetained?: boolean;
  /** `startedAt` of the state message; default: when start() was called. */
  startedAt?: Date;
}

/** The defaults of the optional numbers above (and of the stale sweeper's and the status audit's timing). */
export const BRIDGE_DEFAULTS = Object.freeze({
  protocolVersion: 4 as const,
  startTimeoutMs: 5000,
  reconnectPeriodMs: 1000,
  reconnectMaxMs: 30_000,
  /** Past the 45 s in which a 30 s keepalive notices a dead connection. */
  reconnectStableMs: RECONNECT_STABLE_MS,
  maxStatusesInFlight: 1000,
  /** The stale sweeper unsubscribes after this long without a stale status (ms)... */
  sweepQuietMs: 1000,
  /** ...and at the latest this long after its subscription was granted (ms). */
  sweepMaxMs: 10_000,
  /** The retained-status audit reads back this long after the first task of a burst ended (ms)... */
  auditDelayMs: 2000,
  /** ...ends once no retained status came for this long (ms)... */
  auditQuietMs: 500,
  /** ...and at the latest this long after its subscription was granted (ms). */
  auditMaxMs: 3000,
});
