/**
 * Prometheus counters of the bridge. Get-or-create, so several bridges (or a restarted one)
 * can share a registry without "metric already registered" errors. Every message counts once,
 * through a CounterCell per series (src/metric-cells.ts): a task costs a register five counts
 * (its script, three statuses and a reply), and prom-client hashes and checks the labels on each.
 */
import { Counter, type Registry } from 'prom-client';
import { CounterCell } from '../src/metric-cells.ts';
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

/**
 * The cells of one counter, one per label set, made at its first use; a count after that is two
 * map lookups and no allocation (no key string, no labels object).
 */
class CellTable<K extends string, R extends string> {
  readonly #made = new Map<K, Map<R, CounterCell>>();
  constructor(
    private readonly metric: Counter<string>,
    private readonly labels: (k: K, r: R) => Record<string, string>,
  ) {}

  inc(k: K, r: R): void {
    let row = this.#made.get(k);
    if (row === undefined) {
      row = new Map();
      this.#made.set(k, row);
    }
    let cell = row.get(r);
    if (cell === undefined) {
      cell = new CounterCell(this.metric, this.labels(k, r));
      row.set(r, cell);
    }
    cell.inc();
  }
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
  const inCells = new CellTable<InKind, InLabel>(messagesIn, (kind, result) => ({ kind, result }));
  const outCells = new CellTable<OutKind, ''>(messagesOut, (kind) => ({ kind }));
  return {
    countIn: (kind, result) => inCells.inc(kind, result),
    countOut: (kind) => outCells.inc(kind, ''),
  };
}

export type { OutKind };
