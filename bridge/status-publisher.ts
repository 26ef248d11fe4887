/**
 * Mirrors every task transition to `<ns>/devices/<id>/tasks/<taskId>/status` (contract section 3):
 * retained, QoS 1, one message per transition (queued, started, ended), each with this boot's
 * `bootId` and a `seq` that grows by one per status message published during the boot.
 *
 * While the broker is unreachable nothing is handed to mqtt.js: the task ids whose latest status
 * has not been sent are remembered (`dirty`), and so are the evicted tasks whose retained topic
 * must still be cleared. On every (re)connect `flush()` clears those and republishes the status
 * of every task the queue holds, which the contract demands anyway. Memory stays bounded by the
 * queue's own bounds (held tasks, plus tasks that were on the broker when it went away), and a
 * status superseded while offline is never sent at all.
 */
import type { Logger } from 'pino';
import { type Task, toTaskBody } from '../src/tasks/task.ts';
import type { BridgeLink } from './link.ts';
import { type StatusMessage, topics } from './topics.ts';

export interface StatusPublisherOptions {
  ns: string;
  deviceId: string;
  bootId: string;
  link: BridgeLink;
  logger: Logger;
}

/** The status payload of contract section 3, built from the task the engine holds. */
export function statusMessage(
  task: Readonly<Task>,
  deviceId: string,
  bootId: string,
  seq: number,
): StatusMessage {
  const body = toTaskBody(task);
  // Key order follows the contract's table, for readers of mosquitto_sub output.
  return {
    id: body.id,
    deviceId,
    bootId,
    seq,
    status: body.status,
    ...(body.report !== undefined && { report: body.report }),
    ...(body.error !== undefined && { error: body.error }),
    ...(task.requestId !== undefined && { requestId: task.requestId }),
    queuedAt: body.queuedAt,
    ...(body.startedAt !== undefined && { startedAt: body.startedAt }),
    ...(body.finishedAt !== undefined && { finishedAt: body.finishedAt }),
  };
}

export class StatusPublisher {
  private readonly options: StatusPublisherOptions;
  private seq = 0;
  /** Held tasks whose latest status has not been handed to the broker (offline meanwhile). */
  private readonly dirty = new Set<number>();
  /** Tasks whose status topic may hold a retained message of ours (published, not yet cleared). */
  private readonly atBroker = new Set<number>();
  /** Evicted while offline, with a retained message of ours on the broker: clear on reconnect. */
  private readonly pendingClears = new Set<number>();

  constructor(options: StatusPublisherOptions) {
    this.options = options;
  }

  /** Status messages published during this boot (the last `seq` used). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Messages waiting for the broker: superseded statuses count once per task. */
  get pending(): number {
    return this.dirty.size + this.pendingClears.size;
  }

  /** A transition (queued, started, finished, failed), or a republish for a repeated requestId. */
  publish(task: Readonly<Task>): void {
    if (!this.options.link.online) {
      this.dirty.add(task.id);
      return;
    }
    this.send(task);
  }

  /** The task left the retention window: clear its retained topic (zero-byte, retained). */
  evicted(task: Readonly<Task>): void {
    this.dirty.delete(task.id);
    if (!this.atBroker.has(task.id)) return;
    if (this.options.link.online) this.clear(task.id);
    else this.pendingClears.add(task.id);
  }

  /**
   * After every (re)connect (contract section 3): first the clears owed for tasks evicted while
   * offline, then the status of every held task, oldest first so `seq` follows task order.
   */
  flush(heldNewestFirst: readonly Readonly<Task>[]): void {
    for (const id of this.pendingClears) this.clear(id);
    this.pendingClears.clear();
    this.dirty.clear();
    for (let i = heldNewestFirst.length - 1; i >= 0; i -= 1) this.send(heldNewestFirst[i]!);
  }

  private send(task: Readonly<Task>): void {
    this.seq += 1;
    const { ns, deviceId, bootId, link } = this.options;
    const message = statusMessage(task, deviceId, bootId, this.seq);
    this.atBroker.add(task.id);
    this.dirty.delete(task.id);
    link.publish(
      topics.taskStatus(ns, deviceId, task.id),
      JSON.stringify(message),
      { retain: true },
      'status',
    );
  }

  private clear(id: number): void {
    const { ns, deviceId, link } = this.options;
    this.atBroker.delete(id);
    // [MQTT-3.3.1-10]: a zero-byte retained message removes the retained message of the topic.
    link.publish(topics.taskStatus(ns, deviceId, id), Buffer.alloc(0), { retain: true }, 'clear');
    this.options.logger.debug({ taskId: id }, 'cleared status topic of evicted task');
  }
}
