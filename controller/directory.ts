/**
 * The controller's picture of the store from retained and live state and status messages
 * (docs/mqtt.md; `bootId` + `seq` order a device's messages). Pure, so every ordering rule is
 * unit-tested. A state from a superseded boot is ignored (a crashed boot's late will must not mark
 * the live device offline). Statuses are ordered per task, not per device: brokers replay retained
 * topics in topic order, and a device-wide cursor would drop older tasks' end statuses.
 */

import type { DeviceState, StatusMessage } from '../bridge/contract/topics.ts';
import { storeOfKey } from './store-keys.ts';
import type { DeviceEntry, TaskPhase, TaskView } from './types.ts';

/** Superseded bootIds remembered per device; older ones are forgotten (memory stays bounded). */
const OLD_BOOTS_KEPT = 16;

export interface TaskSummary {
  lastTask?: { id: number; status: TaskView['status'] };
  queue: { queued: number; running: number };
}

export type StateChange =
  | { kind: 'ignored'; reason: string }
  | { kind: 'changed'; entry: DeviceEntry; newBoot: boolean }
  | { kind: 'removed'; deviceId: string };

/** The optional fields of a status message, copied only when present (a view has no undefined keys). */
const OPTIONAL_FIELDS = ['report', 'error', 'requestId', 'startedAt', 'finishedAt'] as const;
type Required_ = 'id' | 'deviceId' | 'bootId' | 'seq' | 'status' | 'queuedAt';
// Compile-time: every field of the wire message is copied (a new field must be added above).
const _everyField: Record<
  Exclude<keyof StatusMessage, Required_ | (typeof OPTIONAL_FIELDS)[number]>,
  never
> = {};
void _everyField;

/**
 * A view built field by field: object spread of the decoded messages cost a third of the
 * controller's time at scale (docs/benchmarks.md, "Fan-out at scale").
 */
export function copyView(
  message: StatusMessage,
  phase: TaskPhase,
  receivedAt: string,
  previousBoot: boolean,
): TaskView {
  const view: TaskView = {
    id: message.id,
    deviceId: message.deviceId,
    bootId: message.bootId,
    seq: message.seq,
    status: message.status,
    queuedAt: message.queuedAt,
    phase,
    receivedAt,
    previousBoot,
  };
  for (const field of OPTIONAL_FIELDS) {
    const value = message[field];
    if (value !== undefined) view[field] = value;
  }
  return view;
}

export function phaseOf(message: Pick<StatusMessage, 'status' | 'startedAt'>): TaskPhase {
  if (message.status === 'FINISHED') return 'finished';
  if (message.status === 'FAILURE') return 'failed';
  return message.startedAt ? 'running' : 'queued';
}

function copyEntry(entry: DeviceEntry): DeviceEntry {
  const copy = { ...entry, groups: [...entry.groups] };
  if (entry.attributes) copy.attributes = { ...entry.attributes };
  return copy;
}

export class DeviceDirectory {
  private readonly devices = new Map<string, DeviceEntry>();
  private readonly tasks = new Map<string, Map<number, TaskView>>();
  private readonly oldBoots = new Map<string, string[]>();
  private readonly maxTasksPerDevice: number;

  /**
   * Contract 6.1: at most a device's `--retain` + `--max-queue` statuses (their defaults, 128 +
   * 1000); beyond, the oldest task is forgotten.
   */
  constructor(maxTasksPerDevice = 128 + 1000) {
    this.maxTasksPerDevice = maxTasksPerDevice;
  }

  /** Applies a message from `<ns>/devices/<deviceId>/state`; `null` is a cleared (zero-byte) topic. */
  applyState(deviceId: string, state: DeviceState | null, now: Date): StateChange {
    if (state === null) {
      if (!this.devices.has(deviceId)) return { kind: 'ignored', reason: 'unknown device cleared' };
      this.devices.delete(deviceId);
      this.tasks.delete(deviceId);
      this.oldBoots.delete(deviceId);
      return { kind: 'removed', deviceId };
    }
    if (state.deviceId !== deviceId) return { kind: 'ignored', reason: 'deviceId differs from topic' };
    if (this.isOldBoot(deviceId, state.bootId))
      return { kind: 'ignored', reason: 'state of a superseded boot' };
    const previous = this.devices.get(deviceId);
    const newBoot = previous !== undefined && previous.bootId !== state.bootId;
    if (previous && newBoot) this.retireBoot(deviceId, previous.bootId);
    const store = storeOfKey(deviceId);
    const entry: DeviceEntry = state.online
      ? {
          deviceId,
          ...(store !== undefined && { store }),
          ...(state.attributes !== undefined && { attributes: { ...state.attributes } }),
          online: true,
          bootId: state.bootId,
          groups: [...state.groups],
          installation: state.installation,
          version: state.version,
          startedAt: state.startedAt,
          lastSeen: now.toISOString(),
        }
      : {
          // The will carries no groups or metadata: keep what this boot told us while online.
          ...(previous && !newBoot ? previous : { groups: [] }),
          deviceId,
          ...(store !== undefined && { store }),
          online: false,
          bootId: state.bootId,
          lastSeen: now.toISOString(),
        };
    this.devices.set(deviceId, entry);
    return { kind: 'changed', entry: copyEntry(entry), newBoot };
  }

  /** Applies a status message; undefined when it is stale (out of order, duplicate, old boot). */
  applyStatus(message: StatusMessage, now: Date): TaskView | undefined {
    const deviceId = message.deviceId;
    let tasks = this.tasks.get(deviceId);
    const existing = tasks?.get(message.id);
    if (existing) {
      if (existing.bootId === message.bootId && message.seq <= existing.seq) return undefined;
      if (existing.bootId !== message.bootId && existing.bootId === this.devices.get(deviceId)?.bootId) {
        return undefined;
      }
    }
    if (!tasks) {
      tasks = new Map();
      this.tasks.set(deviceId, tasks);
    }
    const at = now.toISOString();
    const view = copyView(message, phaseOf(message), at, this.isOldBoot(deviceId, message.bootId));
    tasks.set(message.id, view);
    if (tasks.size > this.maxTasksPerDevice) {
      const oldest = Math.min(...tasks.keys());
      tasks.delete(oldest);
    }
    const entry = this.devices.get(deviceId);
    if (entry && entry.bootId === message.bootId) entry.lastSeen = at;
    return copyView(view, view.phase, at, view.previousBoot);
  }

  /** A status topic was cleared: the task left the device's retention window. */
  clearStatus(deviceId: string, taskId: number): boolean {
    return this.tasks.get(deviceId)?.delete(taskId) ?? false;
  }

  device(deviceId: string): DeviceEntry | undefined {
    const entry = this.devices.get(deviceId);
    return entry ? copyEntry(entry) : undefined;
  }

  /** Every known device, online and offline, sorted by id. */
  list(): DeviceEntry[] {
    return [...this.devices.keys()]
      .sort()
      .map((id) => this.device(id))
      .filter((entry): entry is DeviceEntry => entry !== undefined);
  }

  /** A device's known tasks, newest (highest id) first. */
  tasksOf(deviceId: string): TaskView[] {
    const tasks = this.tasks.get(deviceId);
    if (!tasks) return [];
    return [...tasks.values()]
      .sort((a, b) => b.id - a.id)
      .map((view) => copyView(view, view.phase, view.receivedAt, view.previousBoot));
  }

  /**
   * The device's newest known task (highest id) and its queue (as queueOf), in one pass over its
   * tasks without copying or sorting them: what a device list and its events show.
   */
  taskSummaryOf(deviceId: string): TaskSummary {
    let last: TaskView | undefined;
    const queue = { queued: 0, running: 0 };
    for (const view of this.tasks.get(deviceId)?.values() ?? []) {
      if (!last || view.id > last.id) last = view;
      if (view.previousBoot) continue;
      if (view.phase === 'queued') queue.queued += 1;
      else if (view.phase === 'running') queue.running += 1;
    }
    return { ...(last && { lastTask: { id: last.id, status: last.status } }), queue };
  }

  /** Queued and running tasks of the device's current boot, as far as statuses tell. */
  queueOf(deviceId: string): { queued: number; running: number } {
    const counts = { queued: 0, running: 0 };
    for (const view of this.tasks.get(deviceId)?.values() ?? []) {
      if (view.previousBoot) continue;
      if (view.phase === 'queued') counts.queued += 1;
      else if (view.phase === 'running') counts.running += 1;
    }
    return counts;
  }

  private isOldBoot(deviceId: string, bootId: string): boolean {
    return this.oldBoots.get(deviceId)?.includes(bootId) ?? false;
  }

  private retireBoot(deviceId: string, bootId: string): void {
    const old = this.oldBoots.get(deviceId) ?? [];
    old.push(bootId);
    if (old.length > OLD_BOOTS_KEPT) old.shift();
    this.oldBoots.set(deviceId, old);
    for (const view of this.tasks.get(deviceId)?.values() ?? []) {
      if (view.bootId === bootId) view.previousBoot = true;
    }
  }
}
