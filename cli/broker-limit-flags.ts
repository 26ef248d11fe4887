/**
 * The store broker's limit flags, shared by `regbridge broker` (`--max-packet-bytes`,
 * `--connect-timeout`, `--max-connections`, `--max-pending-per-address`) and serve's embedded broker (the same after
 * `--broker-`). Their defaults are broker/limits.ts's, written here as a user types them.
 */
import { DEFAULT_BROKER_LIMITS, MAX_MQTT_PACKET_BYTES, MIN_MAX_PACKET_BYTES } from '../broker/limits.ts';
import { positiveDuration, wholeNumber } from '../src/config.ts';
import { flag } from './flags.ts';

const D = DEFAULT_BROKER_LIMITS;

/** `--max-packet-bytes` (or `--broker-max-packet-bytes`). */
export function maxPacketBytesFlag(name: string) {
  return flag(
    `--${name} <bytes>`,
    'largest MQTT packet, checked before it is buffered; a larger one closes the connection',
    wholeNumber(MIN_MAX_PACKET_BYTES, MAX_MQTT_PACKET_BYTES),
    { default: String(D.maxPacketBytes) },
  );
}

export function connectTimeoutFlag(name: string) {
  return flag(
    `--${name} <duration>`,
    'a connection that has not completed its CONNECT (TLS handshake included) by then is closed',
    positiveDuration,
    { default: `${D.connectTimeoutMs / 1000}s` },
  );
}

export function maxConnectionsFlag(name: string) {
  return flag(`--${name} <n>`, 'clients logged in at once; a login past it gets CONNACK 3', wholeNumber(1), {
    default: String(D.maxConnections),
  });
}

/** `--max-pending-per-address` (or `--broker-max-pending-per-address`). */
export function maxPendingPerAddressFlag(name: string) {
  return flag(
    `--${name} <n>`,
    'connections from one address not logged in yet; more are closed at once',
    wholeNumber(1),
    { default: String(D.maxPendingPerAddress) },
  );
}

/** `--max-retained-statuses` (or `--broker-max-retained-statuses`): contract 6.1. */
export function maxRetainedStatusesFlag(name: string) {
  return flag(
    `--${name} <n>`,
    'retained task statuses one device may hold (its --retain + --max-queue + 16); a new one beyond is refused',
    wholeNumber(1),
    { default: String(D.maxRetainedStatuses) },
  );
}

/** `--max-awaiting-pubrel` (or `--broker-max-awaiting-pubrel`): contract 6.1. */
export function maxAwaitingPubrelFlag(name: string) {
  return flag(
    `--${name} <n>`,
    'QoS 2 messages one client may have awaiting PUBREL; one more closes its connection',
    wholeNumber(1),
    { default: String(D.maxAwaitingPubrel) },
  );
}

/** `--max-session-inflight` (or `--broker-max-session-inflight`): docs/decisions/session-backlog.md. */
export function maxSessionInflightFlag(name: string) {
  return flag(
    `--${name} <n>`,
    'messages a connected persistent session may hold unacknowledged before publishes to it wait for their PUBACK; 0: no bound',
    wholeNumber(0),
    { default: String(D.maxSessionInflight) },
  );
}

/** `--max-report-bytes`: contract 6.1 (a device's `--output-cap`). */
export function maxReportBytesFlag(name: string) {
  return flag(
    `--${name} <bytes>`,
    "largest report in a task status (a device's --output-cap); a larger status is refused",
    wholeNumber(1),
    { default: String(D.maxReportBytes) },
  );
}
