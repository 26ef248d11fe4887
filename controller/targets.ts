/**
 * Which devices a submission targets, decided from the directory at send time (pure).
 * - `'all'` and `{group}`: the devices known online in that group get the script through ONE
 *   publish to the group topic; known offline ones are OFFLINE. Every device is in group `all`
 *   (docs/mqtt.md). A device first seen offline has no known groups (its last will
 *   carries none), so it only counts for `all`.
 * - An id list: one publish per online id; unknown or offline ids are OFFLINE.
 */

import { ALL_GROUP, assertId } from '../bridge/contract/topics.ts';
import type { DeviceEntry, FanoutTarget } from './types.ts';

export interface TargetPlan {
  online: { deviceId: string; bootId: string }[];
  offline: string[];
  /** Set for group targets: publish once to `<ns>/groups/<group>/scripts`. */
  group?: string;
}

export function planTargets(devices: readonly DeviceEntry[], to: FanoutTarget): TargetPlan {
  const online: TargetPlan['online'] = [];
  const offline: string[] = [];
  if (to === 'all' || !Array.isArray(to)) {
    const group = to === 'all' ? ALL_GROUP : assertId('group', (to as { group: string }).group);
    for (const entry of [...devices].sort((a, b) => a.deviceId.localeCompare(b.deviceId))) {
      if (group !== ALL_GROUP && !entry.groups.includes(group)) continue;
      if (entry.online) online.push({ deviceId: entry.deviceId, bootId: entry.bootId });
      else offline.push(entry.deviceId);
    }
    return { online, offline, group };
  }
  const byId = new Map(devices.map((entry) => [entry.deviceId, entry]));
  for (const id of new Set(to as readonly string[])) {
    assertId('device', id);
    const entry = byId.get(id);
    if (entry?.online) online.push({ deviceId: id, bootId: entry.bootId });
    else offline.push(id);
  }
  return { online, offline };
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
    throw new Error('--to: expected all, group:<G> or a comma-separated list of device ids');
  for (const id of ids) assertId('device', id);
  return ids;
}
