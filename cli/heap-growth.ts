/**
 * `serve --heap-growth <percent>` (docs/decisions/heap-growth.md): how far V8 lets the old
 * generation grow past what the last full collection left live before it runs the next one,
 * i.e. V8's `--heap-growing-percent`.
 *
 * Why a device sets it: V8 picks that growth itself from how fast the program promotes objects,
 * and under an MQTT flood on a machine with a large heap limit it lets the heap grow to several
 * times its live size. The flag is read by V8 at every full collection, so it can be set once the
 * process runs (no restart, no NODE_OPTIONS); the heap limit itself is untouched.
 */
import { setFlagsFromString } from 'node:v8';

/** The default of `--heap-growth`: old generation at most 1.5 x its live size (plus young). */
export const DEFAULT_HEAP_GROWTH_PERCENT = 50;

/**
 * 0 hands the choice back to V8 (and to node flags such as --optimize-for-size): V8's flags are
 * then left as node set them. That matters to the build's code cache (scripts/code-cache.mjs runs
 * serve with `--heap-growth 0`): V8 stamps a cache with a hash of its flags when the cache is
 * taken and rejects it where the flags differ at compile time, which is before serve sets any.
 */
export function applyHeapGrowth(percent: number): void {
  if (!Number.isSafeInteger(percent) || percent < 0) throw new RangeError(`heap growth ${percent}`);
  if (percent === 0) return;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
