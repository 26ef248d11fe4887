/**
 * `serve --heap-growth <percent>` (docs/decisions/heap-growth.md): how far V8 lets the old generation grow past what the last full collection left
 * live before it runs the next one, i.e. V8's `--heap-growing-percent`.
 *
 * Why a device sets it: V8 picks that growth itself, between 10 % and 300 %, from how fast the
 * program promotes objects against how fast it marks them, capped lower only when the heap limit
 * (node derives it from the machine's memory) is under 2 GB. Under an MQTT flood a device promotes
 * fast, so with a 4 GB limit (the bench machine's) V8 let ~25 MiB of live heap grow to 100 MiB
 * before collecting (docs/benchmarks.md, "Heap under floods"). The flag is read by V8 at
 * every full collection, so it can be set once the process runs (no restart, no NODE_OPTIONS);
 * the heap limit itself is untouched, so it never makes an out-of-memory crash more likely.
 */
import { setFlagsFromString } from 'node:v8';

/** The default of `--heap-growth`: old generation at most 1.5 x its live size (plus young). */
export const DEFAULT_HEAP_GROWTH_PERCENT = 50;

/** 0 hands the choice back to V8 (and to node flags such as --optimize-for-size). */
export function applyHeapGrowth(percent: number): void {
  if (!Number.isSafeInteger(percent) || percent < 0) throw new RangeError(`heap growth ${percent}`);
  if (percent === 0) return;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
