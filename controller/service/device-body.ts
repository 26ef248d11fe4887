/** A register as the HTTP API shows it (GET /api/devices, `event: device`). */
import type { TaskSummary } from '../directory.ts';
import type { DeviceEntry } from '../types.ts';

export interface DeviceBody {
  deviceId: string;
  online: boolean;
  groups: string[];
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
  return {
    deviceId: entry.deviceId,
    online: entry.online,
    groups: entry.groups,
    ...(entry.installation !== undefined && { installation: entry.installation }),
    ...(entry.version !== undefined && { version: entry.version }),
    bootId: entry.bootId,
    lastSeenAt: entry.lastSeen,
    ...(last && { lastTask: { id: last.id, status: last.status } }),
    queue,
  };
}
