/**
 * The store broker's limit flags, shared by `regbridge broker` (`--max-packet-bytes`,
 * `--connect-timeout`, `--max-connections`, `--max-pending-per-address`) and serve's embedded broker (the same after
 * `--broker-`). Their defaults are broker/limits.ts's, written here as a user types them.
 */

import type * as z from 'zod';
import { DEFAULT_BROKER_LIMITS, MAX_MQTT_PACKET_BYTES, MIN_MAX_PACKET_BYTES } from '../broker/limits.ts';
import { positiveDuration, wholeNumber } from '../src/config.ts';
import { flag } from './flags.ts';

const D = DEFAULT_BROKER_LIMITS;

/** A limit flag under a name given by its command (`--max-connections`, `--broker-max-connections`). */
function limitFlag<S extends z.ZodType>(value: string, help: string, schema: S, defaultValue: z.input<S>) {
  return (name: string) => flag(`--${name} <${value}>`, help, schema, { default: defaultValue });
}

export const maxPacketBytesFlag = limitFlag(
  'bytes',
  'largest MQTT packet, checked before it is buffered; a larger one closes the connection',
  wholeNumber(MIN_MAX_PACKET_BYTES, MAX_MQTT_PACKET_BYTES),
  String(D.maxPacketBytes),
);

export const connectTimeoutFlag = limitFlag(
  'duration',
  'a connection that has not completed its CONNECT (TLS handshake included) by then is closed',
  positiveDuration,
  `${D.connectTimeoutMs / 1000}s`,
);

export const maxConnectionsFlag = limitFlag(
  'n',
  'clients logged in at once; a login past it gets CONNACK 3',
  wholeNumber(1),
  String(D.maxConnections),
);

export const maxPendingPerAddressFlag = limitFlag(
  'n',
  'connections from one address not logged in yet; more are closed at once',
  wholeNumber(1),
  String(D.maxPendingPerAddress),
);

/** Contract 6.1. */
export const maxRetainedStatusesFlag = limitFlag(
  'n',
  'retained task statuses one device may hold (its --retain + --max-queue + 16); a new one beyond is refused',
  wholeNumber(1),
  String(D.maxRetainedStatuses),
);

/** Contract 6.1. */
export const maxAwaitingPubrelFlag = limitFlag(
  'n',
  'QoS 2 messages one client may have awaiting PUBREL; one more closes its connection',
  wholeNumber(1),
  String(D.maxAwaitingPubrel),
);

/** docs/decisions/session-backlog.md. */
export const maxSessionInflightFlag = limitFlag(
  'n',
  'messages a connected persistent session may hold unacknowledged before publishes to it wait for their PUBACK; 0: no bound',
  wholeNumber(0),
  String(D.maxSessionInflight),
);

/** Contract 6.1 (a device's `--output-cap`). */
export const maxReportBytesFlag = limitFlag(
  'bytes',
  "largest report in a task status (a device's --output-cap); a larger status is refused",
  wholeNumber(1),
  String(D.maxReportBytes),
);
