/**
 * The stores of a head-office controller (`--ns 'stores/+'`), as their registers tell: how many
 * are known and online, when one was last heard of. A store with no register online is `silent`
 * (docs/controller.md, "Many stores"; docs/decisions/head-office-stores.md). Pure, over the
 * directory's entries.
 */
import type { DeviceEntry } from './types.ts';

export interface StoreSummary {
  store: string;
  devices: number;
  online: number;
  lastSeenAt?: string;
  silent: boolean;
}

export function storeSummaries(devices: readonly DeviceEntry[]): StoreSummary[] {
  const stores = new Map<string, StoreSummary>();
  for (const entry of devices) {
    if (entry.store === undefined) continue;
    let summary = stores.get(entry.store);
    if (!summary) {
      summary = { store: entry.store, devices: 0, online: 0, silent: true };
      stores.set(entry.store, summary);
    }
    summary.devices += 1;
    if (entry.online) {
      summary.online += 1;
      summary.silent = false;
    }
    // ISO-8601 UTC strings of one format order as their instants.
    if (summary.lastSeenAt === undefined || entry.lastSeen > summary.lastSeenAt)
      summary.lastSeenAt = entry.lastSeen;
  }
  return [...stores.values()].sort((a, b) => a.store.localeCompare(b.store));
}
