/**
 * The store broker's limits, defaults in one place (the CLI flags `--max-packet-bytes`,
 * `--connect-timeout`, `--max-connections`, `--max-pending-per-address`, `serve --broker-...`,
 * and docs/broker.md "Security").
 */
export interface BrokerLimits {
  /**
   * Largest MQTT packet accepted, fixed header included. Checked when the packet's remaining
   * length is read, before its body is buffered: a larger one closes the connection.
   */
  maxPacketBytes: number;
  /** A connection that has not completed its CONNECT by then is closed. */
  connectTimeoutMs: number;
  /** Clients logged in at once (all listeners together); a login past it gets CONNACK 3. */
  maxConnections: number;
  /**
   * Connections from one address that have not logged in yet (all listeners together); more are
   * closed before any byte is read. Apart from `maxConnections`, so idle sockets cannot lock
   * logged-in clients out.
   */
  maxPendingPerAddress: number;
  /**
   * Retained task statuses one device may hold (contract 6.1): a device's `--retain` plus
   * `--max-queue` plus 16; a new one beyond is refused (broker/device-bounds.ts).
   */
  maxRetainedStatuses: number;
  /** Largest `report` of a task status, UTF-8 bytes (contract 6.1: a device's output cap). */
  maxReportBytes: number;
  /** QoS 2 messages one client may have awaiting PUBREL (contract 6.1); one more closes it. */
  maxAwaitingPubrel: number;
  /**
   * QoS 1/2 messages a connected persistent session may hold unacknowledged before publishes bound
   * for it wait (their PUBACK withheld; broker/aedes-fixes/session-backlog.ts). 0: no bound. Not
   * with Redis.
   */
  maxSessionInflight: number;
  /** Failed logins per address, and per user name, within `loginWindowMs` before refusals. */
  loginMaxFailures: number;
  loginWindowMs: number;
  /**
   * Messages aedes' emitter (mqemitter) delivers at once; more wait in its queue. Each client has
   * at most one read chunk in flight (aedes reads no more from it until the chunk's packets are
   * through), so what this lets in is bounded by the connections anyway. aedes' default of 100
   * made a burst of statuses (500 registers ending together) queue behind one another.
   */
  emitterConcurrency: number;
}

export const DEFAULT_BROKER_LIMITS: Readonly<BrokerLimits> = Object.freeze({
  // The device's largest script (2 MiB REST body limit) plus room for topic and JSON envelope.
  maxPacketBytes: 2 * 1024 * 1024 + 64 * 1024,
  connectTimeoutMs: 10_000,
  maxConnections: 1000,
  maxPendingPerAddress: 32,
  // A device's defaults: --retain 128 + --max-queue 1000, plus 16 (contract 6.1).
  maxRetainedStatuses: 128 + 1000 + 16,
  maxAwaitingPubrel: 64,
  // A device's default --output-cap (1 MiB).
  maxReportBytes: 1024 * 1024,
  // A device's --max-queue: it refuses scripts past it anyway, so more only waits in the broker.
  maxSessionInflight: 1000,
  loginMaxFailures: 10,
  loginWindowMs: 60_000,
  emitterConcurrency: 1000,
});

/** The smallest `maxPacketBytes` that still lets a client connect with a sane CONNECT. */
export const MIN_MAX_PACKET_BYTES = 1024;
/** The largest packet MQTT can express: remaining length 268,435,455 plus a 5-byte header [MQTT-2.2.3]. */
export const MAX_MQTT_PACKET_BYTES = 268_435_460;
