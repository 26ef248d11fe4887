/**
 * Which devices a submission targets, decided from the directory at send time (pure). `'all'` and
 * `{group}`: one publish to the group topic for the known-online devices (a device first seen
 * offline has no known groups, so only counts for `all`); an id list: one publish per online id.
 * Known-offline and unknown ids are OFFLINE.
 */

import { ALL_GROUP, assertId, ID_PATTERN } from '../bridge/contract/topics.ts';
import { splitKey } from './store-keys.ts';
import type { DeviceEntry, FanoutTarget } from './types.ts';

export interface TargetPlan {
  online: { deviceId: string; bootId: string }[];
  offline: string[];
  /** Set for group targets: publish once to `<ns>/groups/<group>/scripts`. */
  group?: string;
}

/** Where the devices come from: a list, or the directory (an id list then looks up only its ids). */
export type DeviceSource =
  | readonly DeviceEntry[]
  | { list(): readonly DeviceEntry[]; device(deviceId: string): DeviceEntry | undefined };

export function planTargets(source: DeviceSource, to: FanoutTarget): TargetPlan {
  const online: TargetPlan['online'] = [];
  const offline: string[] = [];
  const directory = isDirectory(source) ? source : undefined;
  if (to === 'all' || !Array.isArray(to)) {
    const devices = directory ? directory.list() : (source as readonly DeviceEntry[]);
    const group = to === 'all' ? ALL_GROUP : assertId('group', (to as { group: string }).group);
    for (const entry of [...devices].sort((a, b) => a.deviceId.localeCompare(b.deviceId))) {
      if (group !== ALL_GROUP && !entry.groups.includes(group)) continue;
      if (entry.online) online.push({ deviceId: entry.deviceId, bootId: entry.bootId });
      else offline.push(entry.deviceId);
    }
    return { online, offline, group };
  }
  // A job sends to one register at a time: looking its id up beats listing the whole store.
  const byId = directory
    ? undefined
    : new Map((source as readonly DeviceEntry[]).map((e) => [e.deviceId, e]));
  const lookup = (id: string): DeviceEntry | undefined => (directory ? directory.device(id) : byId!.get(id));
  for (const id of new Set(to as readonly string[])) {
    assertKey(id);
    const entry = lookup(id);
    if (entry?.online) online.push({ deviceId: id, bootId: entry.bootId });
    else offline.push(id);
  }
  return { online, offline };
}

/** A device id, or `store/id` (a controller for several stores, controller/store-keys.ts). */
function assertKey(key: string): string {
  const { store, deviceId } = splitKey(key);
  if (store !== undefined && !ID_PATTERN.test(store))
    throw new Error(
      `invalid store id ${JSON.stringify(store)} in ${JSON.stringify(key)}: must match [A-Za-z0-9_-]{1,64}`,
    );
  assertId('device', deviceId);
  return key;
}

function isDirectory(source: DeviceSource): source is Exclude<DeviceSource, readonly DeviceEntry[]> {
  return !Array.isArray(source);
}

/** `--to` on the command line: `all`, `group:<G>` or `id,id,...`. */
export function parseTarget(spec: string): FanoutTarget {
  const trimmed = spec.trim();
  if (trimmed === 'all') return 'all';
  if (trimmed.startsWith('group:')) return { group: assertId('group', trimmed.slice('group:'.length)) };
  const ids = trimmed
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  if (ids.length === 0)
    throw new Error(
      '--to: expected all, group:<G> or a comma-separated list of device ids (store/id with several stores)',
    );
  for (const id of ids) assertKey(id);
  return ids;
}
