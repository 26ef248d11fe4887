/**
 * One submission's bookkeeping: targets, their answers and final results. Pure (fed messages and
 * the clock), so its rules, chosen where docs/mqtt.md is silent, are unit-tested without a broker:
 * only the bootId a target had when sent counts; a new boot before the end is FAILURE at once
 * (tasks live in RAM); offline mid-run keeps waiting (a will also fires on a network loss); a
 * refused script is FAILURE, refused cancels (same reply topic, contract 3.1) end nothing.
 */

import type { Reply } from '../bridge/contract/topics.ts';
import type { DeviceEntry, FanoutResult, TaskView } from './types.ts';

/** Codes only a cancel is refused with (docs/errors.md): a cancel's answer, not the script's. */
const CANCEL_REFUSALS = ['TASK_RUNNING:', 'TASK_ENDED:', 'TASK_DOES_NOT_EXIST:'];

interface Target {
  deviceId: string;
  bootId: string;
  taskId?: number;
  phase?: TaskView['phase'];
  acknowledged: boolean;
  wentOffline: boolean;
}

export class Fanout {
  readonly requestId: string;
  readonly sentAt: number;
  /** Devices the script is sent to: those online at send time. */
  readonly sentTo: readonly string[];
  private readonly sentToSet: ReadonlySet<string>;
  /** Result order: the order devices were targeted in. */
  private readonly order: string[] = [];
  private readonly pending = new Map<string, Target>();
  private readonly ended = new Map<string, FanoutResult>();

  constructor(
    requestId: string,
    sentAt: number,
    online: readonly { deviceId: string; bootId: string }[],
    offline: readonly string[],
  ) {
    this.requestId = requestId;
    this.sentAt = sentAt;
    this.sentToSet = new Set(online.map((t) => t.deviceId));
    this.sentTo = [...this.sentToSet];
    for (const { deviceId, bootId } of online) {
      if (this.has(deviceId)) continue;
      this.order.push(deviceId);
      this.pending.set(deviceId, { deviceId, bootId, acknowledged: false, wentOffline: false });
    }
    for (const deviceId of offline) {
      if (this.has(deviceId)) continue;
      this.order.push(deviceId);
      this.ended.set(deviceId, { deviceId, status: 'OFFLINE' });
    }
  }

  get total(): number {
    return this.order.length;
  }

  get done(): number {
    return this.ended.size;
  }

  get complete(): boolean {
    return this.pending.size === 0;
  }

  /** Devices targeted that have no result yet. */
  pendingDeviceIds(): string[] {
    return [...this.pending.keys()];
  }

  /** Targets with no result yet and the boot each was sent to. */
  pendingTargets(): { deviceId: string; bootId: string }[] {
    return [...this.pending.values()].map(({ deviceId, bootId }) => ({ deviceId, bootId }));
  }

  /** Results known at construction (OFFLINE), in target order. */
  initialResults(): FanoutResult[] {
    return this.order.map((id) => this.ended.get(id)).filter((r): r is FanoutResult => r !== undefined);
  }

  /** Whether the script was sent to this device (directly or through one of its groups). */
  wasSentTo(deviceId: string): boolean {
    return this.sentToSet.has(deviceId);
  }

  /** `reply.deviceId` is the register whose reply topic it came on (controller/messages.ts). */
  onReply(reply: Reply, now: number): FanoutResult | undefined {
    if (reply.requestId !== this.requestId) return undefined;
    const target = this.pending.get(reply.deviceId);
    if (!target) return undefined;
    if ('error' in reply) {
      if (CANCEL_REFUSALS.some((code) => reply.error.startsWith(code))) return undefined;
      return this.end(target, {
        deviceId: target.deviceId,
        status: 'FAILURE',
        error: reply.error,
        refused: true,
        durationMs: now - this.sentAt,
      });
    }
    target.acknowledged = true;
    target.taskId ??= reply.id;
    return undefined;
  }

  onStatus(view: TaskView, now: number): FanoutResult | undefined {
    const target = this.pending.get(view.deviceId);
    if (!target || view.bootId !== target.bootId) return undefined;
    const ours =
      view.requestId === this.requestId || (target.taskId !== undefined && view.id === target.taskId);
    if (!ours) return undefined;
    target.acknowledged = true;
    target.taskId = view.id;
    target.phase = view.phase;
    const durationMs = now - this.sentAt;
    if (view.status === 'FINISHED') {
      return this.end(target, {
        deviceId: target.deviceId,
        status: 'FINISHED',
        report: view.report ?? '',
        taskId: view.id,
        durationMs,
      });
    }
    if (view.status === 'FAILURE') {
      return this.end(target, {
        deviceId: target.deviceId,
        status: 'FAILURE',
        error: view.error ?? '',
        taskId: view.id,
        durationMs,
      });
    }
    return undefined;
  }

  onState(entry: DeviceEntry, now: number): FanoutResult | undefined {
    const target = this.pending.get(entry.deviceId);
    if (!target) return undefined;
    if (entry.bootId !== target.bootId) {
      return this.end(target, {
        deviceId: target.deviceId,
        status: 'FAILURE',
        error: 'device restarted (new bootId)',
        ...(target.taskId !== undefined ? { taskId: target.taskId } : {}),
        durationMs: now - this.sentAt,
      });
    }
    target.wentOffline = !entry.online;
    return undefined;
  }

  /** The pending targets among `deviceIds` end FAILURE with `error` (e.g. the publish failed). */
  fail(deviceIds: readonly string[], error: string, now: number): FanoutResult[] {
    const results: FanoutResult[] = [];
    for (const id of deviceIds) {
      const target = this.pending.get(id);
      if (target) {
        results.push(
          this.end(target, { deviceId: id, status: 'FAILURE', error, durationMs: now - this.sentAt }),
        );
      }
    }
    return results;
  }

  /** The deadline passed (or the controller stopped): every pending target is NO_ANSWER. */
  expire(reason?: string): FanoutResult[] {
    return [...this.pending.values()].map((target) => {
      const parts: string[] = [];
      if (reason) parts.push(reason);
      if (!target.acknowledged) parts.push('no reply');
      else if (target.taskId !== undefined) {
        parts.push(`task ${target.taskId} still ${target.phase === 'running' ? 'running' : 'queued'}`);
      } else parts.push('accepted, no status');
      if (target.wentOffline) parts.push('device went offline');
      return this.end(target, {
        deviceId: target.deviceId,
        status: 'NO_ANSWER',
        ...(target.taskId !== undefined ? { taskId: target.taskId } : {}),
        detail: parts.join('; '),
      });
    });
  }

  results(): FanoutResult[] {
    return this.order.map((id) => this.ended.get(id)).filter((r): r is FanoutResult => r !== undefined);
  }

  private has(deviceId: string): boolean {
    return this.pending.has(deviceId) || this.ended.has(deviceId);
  }

  private end(target: Target, result: FanoutResult): FanoutResult {
    this.pending.delete(target.deviceId);
    this.ended.set(target.deviceId, result);
    return result;
  }
}
