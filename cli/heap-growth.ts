/**
 * `serve --heap-growth <percent>` (docs/decisions/heap-growth.md): V8's `--heap-growing-percent`,
 * how far the old generation may grow past the last full collection's live size. Under an MQTT
 * flood V8 otherwise lets a large-limit heap grow to several times its live size; the flag is read
 * at every full collection, so it can be set at run time.
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
