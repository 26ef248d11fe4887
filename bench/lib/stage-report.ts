/**
 * status-under-load.ts `--stages`: splits each FINISHED status's end-to-controller time at the
 * store broker's stamps (lib/broker-stages.ts), all on this process's clock: register end ->
 * parsed by aedes (the host's queue, bridge, mqtt.js and the wire) -> aedes starts the publish (its
 * PUBACK written) -> written to the controller's socket -> the controller's `status` event (the
 * wire, mqtt.js, the controller). One line per round: p50 / p99 / max of each stage, and each
 * stage's mean over the slowest 1 % of statuses (what makes the tail).
 */
import { Latencies } from './hist.ts';

export type StageSample = [total: number, host: number, admit: number, deliver: number, controller: number];

const NAMES = ['host->parsed', 'parsed->publish', 'publish->written', 'written->controller'];

export function stageLine(samples: readonly StageSample[]): string {
  if (samples.length === 0) return 'stages: no sample';
  const parts: string[] = [];
  for (const [i, name] of NAMES.entries()) {
    const h = new Latencies();
    for (const s of samples) h.recordMs(s[i + 1]!);
    const { p50, p99, max } = h.summary();
    parts.push(`${name} ${p50}/${p99}/${max}`);
  }
  const sorted = [...samples].sort((a, b) => b[0] - a[0]);
  const tail = sorted.slice(0, Math.max(1, Math.ceil(sorted.length / 100)));
  const mean = (i: number): string => (tail.reduce((n, s) => n + s[i]!, 0) / tail.length).toFixed(1);
  return (
    `stages p50/p99/max ms: ${parts.join(', ')}; slowest ${tail.length} (total ${mean(0)} ms): ` +
    NAMES.map((name, i) => `${name} ${mean(i + 1)}`).join(', ')
  );
}
