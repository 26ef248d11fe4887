/** A register as the HTTP API shows it (GET /api/devices, `event: device`). */
import type { TaskSummary } from '../directory.ts';
import { splitKey } from '../store-keys.ts';
import type { DeviceEntry } from '../types.ts';

export interface DeviceBody {
  /** With several stores only (`--ns 'stores/+'`). */
  store?: string;
  deviceId: string;
  online: boolean;
  groups: string[];
  attributes?: Record<string, string>;
  installation?: string;
  version?: string;
  bootId: string;
  lastSeenAt: string;
  lastTask?: { id: number; status: string };
  /** Tasks of the current boot queued and running, as far as their statuses tell. */
  queue: { queued: number; running: number };
}

/** `tasks`: the newest task seen (highest id) and the queue (DeviceDirectory.taskSummaryOf). */
export function deviceBody(entry: DeviceEntry, { lastTask: last, queue }: TaskSummary): DeviceBody {
  const { store, deviceId } = splitKey(entry.deviceId);
  return {
    ...(store !== undefined && { store }),
    deviceId,
    online: entry.online,
    groups: entry.groups,
    ...(entry.attributes !== undefined && { attributes: entry.attributes }),
    ...(entry.installation !== undefined && { installation: entry.installation }),
    ...(entry.version !== undefined && { version: entry.version }),
    bootId: entry.bootId,
    lastSeenAt: entry.lastSeen,
    ...(last && { lastTask: { id: last.id, status: last.status } }),
    queue,
  };
}
