/**
 * Prometheus counters of the bridge. Get-or-create, so several bridges (or a restarted one)
 * can share a registry without "metric already registered" errors.
 */
import { Counter, type Registry } from 'prom-client';
import type { OutKind } from './bridge-link.ts';

export type InResult = 'accepted' | 'duplicate' | 'refused' | 'ignored';

export interface BridgeMetrics {
  messagesIn: Counter<'kind' | 'result'>;
  messagesOut: Counter<'kind'>;
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
  return {
    messagesIn: counter(
      registry,
      'regbridge_mqtt_messages_in_total',
      'MQTT messages received by the device bridge, by kind (script, status) and result',
      ['kind', 'result'],
    ),
    messagesOut: counter(
      registry,
      'regbridge_mqtt_messages_out_total',
      'MQTT messages published by the device bridge, by kind (state, status, clear, reply)',
      ['kind'],
    ),
  };
}

export type { OutKind };
