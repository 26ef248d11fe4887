/**
 * What a controller for several stores (`--ns 'stores/+'`) adds to the API's bodies: its
 * registers are keyed `store/id` inside (controller/store-keys.ts), and every result the API
 * shows carries them apart as `store` and `deviceId`. One hook for every route answering jobs or
 * results, so no route can show a key by mistake.
 */
import type { FastifyInstance } from 'fastify';
import { countResults, type JobCounts, type ResultStatus } from '../job-types.ts';
import { splitKey } from '../store-keys.ts';

interface Keyed {
  deviceId: string;
  store?: string;
}

export function splitResult<T extends Keyed>(result: T): T {
  if (!result.deviceId.includes('/')) return result;
  const { store, deviceId } = splitKey(result.deviceId);
  const { deviceId: _key, ...rest } = result;
  return { store, deviceId, ...rest } as T;
}

/** A job or a result page with its `results` (or the SSE event's one `result`) split. */
export function splitResults(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null) return payload;
  const body = payload as { results?: unknown; result?: unknown };
  let changed: Record<string, unknown> | undefined;
  if (Array.isArray(body.results) && body.results.some((r) => (r as Keyed)?.deviceId?.includes?.('/')))
    changed = { ...body, results: (body.results as Keyed[]).map(splitResult) };
  const single = body.result as Keyed | undefined;
  if (typeof single?.deviceId === 'string' && single.deviceId.includes('/'))
    changed = { ...(changed ?? body), result: splitResult(single) };
  return changed ?? payload;
}

/** Installs the split on every answer of `app` (several stores only). */
export function installStoreBodies(app: FastifyInstance): void {
  app.addHook('preSerialization', async (_request, _reply, payload) => splitResults(payload));
}

/** `?by=store`: each store's counts, as the job's own (results without a store are left out). */
export function countsByStore(
  results: readonly { deviceId: string; status: ResultStatus }[],
): Record<string, JobCounts> {
  const byStore = new Map<string, { status: ResultStatus }[]>();
  for (const result of results) {
    const store = splitKey(result.deviceId).store;
    if (store === undefined) continue;
    const list = byStore.get(store);
    if (list) list.push(result);
    else byStore.set(store, [result]);
  }
  return Object.fromEntries(
    [...byStore.keys()].sort().map((store) => [store, countResults(byStore.get(store)!)]),
  );
}
