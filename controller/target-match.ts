/**
 * Which registers a job's target takes (docs/controller.md, "Jobs: target, rollout, deadline,
 * abort, cancel"): `group`, `devices`, `stores` and `attributes` may be combined, and a register
 * is taken when it matches every condition given. Listed devices are keys: a plain id, or
 * `store/id` with several stores (a plain id there matches that id in every store). Pure, over
 * the directory's entries.
 */
import { ALL_GROUP } from '../bridge/contract/topics.ts';
import type { JobTarget } from './job-types.ts';
import { splitKey } from './store-keys.ts';
import type { DeviceEntry } from './types.ts';

/** Whether `entry` matches every condition of `target`. */
export function matchesTarget(target: JobTarget, entry: DeviceEntry): boolean {
  if (target.group !== undefined && target.group !== ALL_GROUP && !entry.groups.includes(target.group))
    return false;
  if (target.stores !== undefined && (entry.store === undefined || !target.stores.includes(entry.store)))
    return false;
  if (target.attributes !== undefined) {
    for (const [key, value] of Object.entries(target.attributes)) {
      if (entry.attributes?.[key] !== value) return false;
    }
  }
  if (target.devices !== undefined && !listed(target.devices, entry)) return false;
  return true;
}

function listed(devices: readonly string[], entry: DeviceEntry): boolean {
  if (devices.includes(entry.deviceId)) return true;
  if (entry.store === undefined) return false;
  return devices.includes(splitKey(entry.deviceId).deviceId);
}

/** Only a device list: the result order is the list's, and unknown ids may be allowed. */
export function onlyDevices(target: JobTarget): target is JobTarget & { devices: string[] } {
  return (
    target.devices !== undefined &&
    target.group === undefined &&
    target.stores === undefined &&
    target.attributes === undefined
  );
}

/**
 * The registers a target takes: a device list alone in its own order (unknown ids included when
 * `allowUnknown`), otherwise every known register matching, in key order.
 */
export function resolveTarget(
  target: JobTarget,
  devices: readonly DeviceEntry[],
  multiStore: boolean,
): string[] {
  if (onlyDevices(target) && !multiStore) return [...new Set(target.devices)];
  if (onlyDevices(target)) {
    // A plain id is that id in every store: look the keys up by id once, not per listed id.
    const byId = new Map<string, string[]>();
    for (const entry of devices) {
      const id = splitKey(entry.deviceId).deviceId;
      const keys = byId.get(id);
      if (keys) keys.push(entry.deviceId);
      else byId.set(id, [entry.deviceId]);
    }
    const keys: string[] = [];
    for (const id of new Set(target.devices)) {
      if (id.includes('/')) keys.push(id);
      else keys.push(...(byId.get(id) ?? []));
    }
    return [...new Set(keys)];
  }
  return devices.filter((entry) => matchesTarget(target, entry)).map((entry) => entry.deviceId);
}

/** Listed ids no known register answers to (a typo waits for the deadline otherwise). */
export function unknownListed(target: JobTarget, devices: readonly DeviceEntry[]): string[] {
  if (target.devices === undefined) return [];
  const keys = new Set(devices.map((entry) => entry.deviceId));
  const ids = new Set(devices.map((entry) => splitKey(entry.deviceId).deviceId));
  return [...new Set(target.devices)].filter(
    (id) => !keys.has(id) && !(id.includes('/') ? false : ids.has(id)),
  );
}

/** A short description of a target for the audit trail and error messages. */
export function describeTarget(target: JobTarget): string {
  const parts: string[] = [];
  if (target.group !== undefined) parts.push(`group ${target.group}`);
  if (target.stores !== undefined) parts.push(`stores ${target.stores.join(',')}`);
  if (target.attributes !== undefined)
    parts.push(
      `attributes ${Object.entries(target.attributes)
        .map(([key, value]) => `${key}=${value}`)
        .join(',')}`,
    );
  if (target.devices !== undefined) parts.push(`devices ${target.devices.join(',')}`);
  return parts.join(' and ');
}
