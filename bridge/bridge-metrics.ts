/**
 * Prometheus counters of the bridge. Get-or-create, so several bridges (or a restarted one)
 * can share a registry without "metric already registered" errors. Every message counts once.
 */
import { Counter, type Registry } from 'prom-client';
import type { OutKind } from './bridge-link.ts';
import type { CancelResult } from './cancel-intake.ts';

export type InResult = 'accepted' | 'duplicate' | 'refused' | 'ignored';
/** A received message's result label: a script's (InResult) or a cancel's. */
type InLabel = InResult | CancelResult;

/** What a received message was: a script, a cancel, or anything else the bridge ignores. */
export type InKind = 'script' | 'cancel' | 'other';

export interface BridgeMetrics {
  /** One message received: `regbridge_mqtt_messages_in_total{kind, result}` + 1. */
  countIn(kind: InKind, result: InLabel): void;
  /** One message published: `regbridge_mqtt_messages_out_total{kind}` + 1. */
  countOut(kind: OutKind): void;
}

function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [registry] });
}

export function bridgeMetrics(registry: Registry): BridgeMetrics {
  const messagesIn = counter(
    registry,
    'regbridge_mqtt_messages_in_total',
    'MQTT messages received by the device bridge, by kind (script, status) and result',
    ['kind', 'result'],
  );
  const messagesOut = counter(
    registry,
    'regbridge_mqtt_messages_out_total',
    'MQTT messages published by the device bridge, by kind (state, status, clear, reply)',
    ['kind'],
  );
  return {
    countIn: (kind, result) => messagesIn.inc({ kind, result }),
    countOut: (kind) => messagesOut.inc({ kind }),
  };
}

export type { OutKind };
