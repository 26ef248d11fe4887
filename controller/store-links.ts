/**
 * A head-office controller's view of each store's link (`--store-link-topic`), as Mosquitto bridge
 * notifications publish it (retained `1`/`0`). A store whose link is down keeps its registers'
 * retained states at the hub, all online: only this says it went silent (docs/controller.md).
 */

export interface StoreLink {
  up: boolean;
  /** ISO time this controller heard it. */
  at: string;
}

/** `1`/`0` (Mosquitto), `true`/`false`, `online`/`offline`, or `{"online": bool}`; undefined otherwise. */
export function parseLinkPayload(payload: Buffer): boolean | undefined {
  const text = payload.toString('utf8').trim().toLowerCase();
  if (text === '1' || text === 'true' || text === 'online') return true;
  if (text === '0' || text === 'false' || text === 'offline') return false;
  try {
    const json = JSON.parse(text) as { online?: unknown };
    return typeof json?.online === 'boolean' ? json.online : undefined;
  } catch {
    return undefined;
  }
}

/** Stores whose link is kept: any client that may publish under the namespace could add some. */
export const MAX_STORE_LINKS = 10_000;

/** The last link state heard per store; a cleared (zero-byte) topic forgets the store's. */
export class StoreLinks {
  private readonly links = new Map<string, StoreLink>();

  constructor(private readonly maxStores = MAX_STORE_LINKS) {}

  /** Applies one message; false when it changed nothing, could not be read, or is one store too many. */
  apply(store: string, payload: Buffer, now: Date): boolean {
    if (payload.length === 0) return this.links.delete(store);
    const up = parseLinkPayload(payload);
    if (up === undefined) return false;
    const previous = this.links.get(store);
    if (previous === undefined && this.links.size >= this.maxStores) return false;
    this.links.set(store, { up, at: now.toISOString() });
    return previous?.up !== up;
  }

  all(): ReadonlyMap<string, StoreLink> {
    return new Map(this.links);
  }
}
