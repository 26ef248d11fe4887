/**
 * What the device bridge reports about itself: its connection for /health (docs/api.md) and its
 * flow control (docs/mqtt.md, "Backpressure").
 */
import type { MqttHealth } from '../src/health.ts';
import type { BridgeParts } from './bridge-components.ts';

export type BridgePhase = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'stopped';

/**
 * QoS 1 messages of every kind not yet acknowledged by the broker, the status and clear messages
 * among them (now, highest so far, and the bound), and the statuses and clears waiting for room.
 */
export interface BridgeBacklog {
  unacknowledged: number;
  statuses: { now: number; peak: number; max: number };
  waiting: number;
}

export function bridgeHealth(input: {
  phase: BridgePhase;
  /** The broker in use, once start() was called. */
  url: string | undefined;
  protocolVersion: number;
  parts: Pick<BridgeParts, 'statuses' | 'link'>;
  /** The reconnect attempt awaited, while disconnected (contract/reconnect-backoff.ts). */
  reconnect?: { attempt: number; inMs: number } | undefined;
  /** Date.now() when the bridge last was without a connection (start, or the loss); undefined: connected. */
  offlineSince?: number | undefined;
}): MqttHealth {
  const { phase, parts } = input;
  const state: MqttHealth['state'] =
    phase === 'connected' || phase === 'connecting' || phase === 'reconnecting' ? phase : 'offline';
  const health: MqttHealth = { state };
  if (input.url !== undefined) health.url = input.url;
  if (phase === 'connected') health.protocol = input.protocolVersion === 5 ? '5' : '3.1.1';
  health.pending = parts.statuses.pending + parts.link.inFlight;
  if (phase !== 'connected' && phase !== 'stopped' && input.reconnect) health.reconnect = input.reconnect;
  if (phase !== 'connected' && input.offlineSince !== undefined)
    health.offlineMs = Math.max(0, Date.now() - input.offlineSince);
  return health;
}

export function bridgeBacklog(parts: Pick<BridgeParts, 'statuses' | 'link'>): BridgeBacklog {
  return {
    unacknowledged: parts.link.inFlight,
    statuses: parts.statuses.unacknowledged,
    waiting: parts.statuses.pending,
  };
}
