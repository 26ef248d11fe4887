/**
 * How a controller for many stores (`--ns 'stores/+'`) keys its registers: `<store>/<deviceId>`.
 * Device ids and store ids never hold `/` (`[A-Za-z0-9_-]{1,64}`), so the key splits back
 * unambiguously, and a single-store controller's keys are its plain device ids: everything keyed
 * by device (directory, submissions, jobs, results) works unchanged for both, and the one place
 * a key meets the wire (a topic, an API body) splits it (docs/decisions/head-office-store-keys.md).
 */
import { isMultiStore, namespaceOfStore } from '../bridge/contract/store-namespace.ts';

export function deviceKey(store: string | undefined, deviceId: string): string {
  return store === undefined ? deviceId : `${store}/${deviceId}`;
}

export function splitKey(key: string): { store?: string; deviceId: string } {
  const at = key.indexOf('/');
  return at < 0 ? { deviceId: key } : { store: key.slice(0, at), deviceId: key.slice(at + 1) };
}

export function storeOfKey(key: string): string | undefined {
  const at = key.indexOf('/');
  return at < 0 ? undefined : key.slice(0, at);
}

/** The namespace and device id a key's topics are built from. */
export function topicPartsOf(ns: string, key: string): { ns: string; deviceId: string } {
  if (!isMultiStore(ns)) return { ns, deviceId: key };
  const { store, deviceId } = splitKey(key);
  if (store === undefined)
    throw new Error(`register ${key} has no store (a multi-store controller keys store/id)`);
  return { ns: namespaceOfStore(ns, store), deviceId };
}
