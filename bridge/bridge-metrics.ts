/**
 * Prometheus counters of the bridge. Get-or-create, so several bridges (or a restarted one)
 * can share a registry without "metric already registered" errors. Every message counts once,
 * through a CounterCell per series (src/metric-cells.ts): a task costs a register five counts
 * (its script, three statuses and a reply), and prom-client hashes and checks the labels on each.
 */
import { Counter, type Registry } from 'prom-client';
import { CounterCell } from '../src/metric-cells.ts';
import type { OutKind } from './bridge-link.ts';

export type InResult = 'accepted' | 'duplicate' | 'refused' | 'ignored';

export interface BridgeMetrics {
  messagesIn: Counter<'kind' | 'result'>;
  messagesOut: Counter<'kind'>;
  /** One message received: `regbridge_mqtt_messages_in_total{kind, result}` + 1. */
  countIn(kind: string, result: string): void;
  /** One message published: `regbridge_mqtt_messages_out_total{kind}` + 1. */
  countOut(kind: OutKind): void;
}

/** The cells of one counter, one per label set, made at its first use. */
function cells<L extends string>(
  metric: Counter<L>,
): (key: string, labels: Record<L, string>) => CounterCell {
  const made = new Map<string, CounterCell>();
  return (key, labels) => {
    let cell = made.get(key);
    if (cell === undefined) {
      cell = new CounterCell(metric as Counter<string>, labels);
      made.set(key, cell);
    }
    return cell;
  };
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
  const inCell = cells(messagesIn);
  const outCell = cells(messagesOut);
  return {
    messagesIn,
    messagesOut,
    countIn: (kind, result) => inCell(`${kind}/${result}`, { kind, result }).inc(),
    countOut: (kind) => outCell(kind, { kind }).inc(),
  };
}

export type { OutKind };
