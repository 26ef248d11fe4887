/**
 * The stores of a head-office controller (`--ns 'stores/+'`), as their registers tell: how many
 * are known and online, when one was last heard of, its link (store-links.ts). A store with no
 * register online, or whose link is down, is `silent` (docs/controller.md, "Many stores";
 * docs/decisions/head-office-stores.md). Pure, over the directory's entries and the links.
 */
import type { StoreLink } from './store-links.ts';
import type { DeviceEntry } from './types.ts';

export interface StoreSummary {
  store: string;
  devices: number;
  online: number;
  lastSeenAt?: string;
  /** As the store's link topic last said (`--store-link-topic`); absent when nothing was heard. */
  link?: 'up' | 'down';
  silent: boolean;
}

export function storeSummaries(
  devices: readonly DeviceEntry[],
  links: ReadonlyMap<string, StoreLink> = new Map(),
): StoreSummary[] {
  const stores = new Map<string, StoreSummary>();
  for (const [store, link] of links) {
    stores.set(store, { store, devices: 0, online: 0, link: link.up ? 'up' : 'down', silent: true });
  }
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
  // A store whose link is down is silent whatever its registers' last states said.
  for (const summary of stores.values()) if (summary.link === 'down') summary.silent = true;
  return [...stores.values()].sort((a, b) => a.store.localeCompare(b.store));
}
