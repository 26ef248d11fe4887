/**
 * Mirrors every task transition to `<ns>/devices/<id>/tasks/<taskId>/status` (docs/mqtt.md):
 * retained, QoS 1, with this boot's `bootId` and a `seq` growing by one per message. At most
 * `maxInFlight` messages wait for a PUBACK; beyond that only *which* tasks are owed a status or a
 * clear is remembered and their latest state sent later, so memory stays bounded by the queue
 * (docs/mqtt.md, "Backpressure").
 */
import type { Logger } from 'pino';
import { type Task, toTaskBody } from '../src/tasks/task.ts';
import type { BridgeLink } from './bridge-link.ts';
import { BRIDGE_DEFAULTS } from './bridge-options.ts';
import { type StatusMessage, topics } from './contract/topics.ts';

export interface StatusPublisherOptions {
  ns: string;
  deviceId: string;
  bootId: string;
  link: BridgeLink;
  logger: Logger;
  /** A held task by id (the queue's get): dirty tasks are sent in their state at sending time. */
  getTask: (id: number) => Readonly<Task> | undefined;
  /** At most this many status and clear messages wait for their PUBACK (default 1000). */
  maxInFlight?: number;
}

/** The status payload of docs/mqtt.md, built from the task the engine holds. */
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
  private readonly maxInFlight: number;
  private seq = 0;
  /** Our messages handed to mqtt.js whose PUBACK has not come back (or that failed) yet. */
  private inFlight = 0;
  /** Highest `inFlight` seen: the bound at work, for tests and benchmarks. */
  private inFlightPeak = 0;
  /** Held tasks whose latest status has not been handed to the broker, oldest change first. */
  private readonly dirty = new Set<number>();
  /** Tasks whose status topic may hold a retained message of ours (published, not yet cleared). */
  private readonly atBroker = new Set<number>();
  /** Evicted tasks with a retained message of ours on the broker, not yet cleared. */
  private readonly pendingClears = new Set<number>();
  /** Set while pump() runs: a completion called back synchronously must not recurse into it. */
  private pumping = false;
  /** mqtt.js calls this once per message: acknowledged, or failed for good. */
  private readonly onDone = (): void => {
    this.inFlight -= 1;
    if (!this.pumping) this.pump();
  };

  constructor(options: StatusPublisherOptions) {
    this.options = options;
    this.maxInFlight = Math.max(1, options.maxInFlight ?? BRIDGE_DEFAULTS.maxStatusesInFlight);
  }

  /** Status messages published during this boot (the last `seq` used). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Messages waiting to be handed to mqtt.js: superseded statuses count once per task. */
  get pending(): number {
    return this.dirty.size + this.pendingClears.size;
  }

  /** Status and clear messages handed to mqtt.js and not yet acknowledged, and the peak of it. */
  get unacknowledged(): { now: number; peak: number; max: number } {
    return { now: this.inFlight, peak: this.inFlightPeak, max: this.maxInFlight };
  }

  /** A transition (queued, started, finished, failed), or a republish for a repeated requestId. */
  publish(task: Readonly<Task>): void {
    // Behind a backlog the task waits its turn too: sending it first would starve older ones.
    if (this.hasRoom() && this.dirty.size === 0 && this.pendingClears.size === 0) this.send(task);
    else this.dirty.add(task.id);
  }

  /** The task left the retention window: clear its retained topic (zero-byte, retained). */
  evicted(task: Readonly<Task>): void {
    this.dirty.delete(task.id);
    if (!this.atBroker.has(task.id)) return;
    if (this.hasRoom() && this.pendingClears.size === 0) this.clear(task.id);
    else this.pendingClears.add(task.id);
  }

  /**
   * After every (re)connect (docs/mqtt.md): first the clears owed for evicted tasks, then
   * the status of every held task, oldest first so `seq` follows task order; as many as the
   * in-flight bound allows now, the rest as acknowledgements come back.
   */
  flush(heldNewestFirst: readonly Readonly<Task>[]): void {
    // Our unacknowledged messages are all still in mqtt.js' outgoing map (it resends them now):
    // a count above that would be a lost completion, which must not block statuses for good.
    this.inFlight = Math.min(this.inFlight, this.options.link.inFlight);
    this.dirty.clear();
    for (let i = heldNewestFirst.length - 1; i >= 0; i -= 1) this.dirty.add(heldNewestFirst[i]!.id);
    this.pump();
  }

  private hasRoom(): boolean {
    return this.options.link.online && this.inFlight < this.maxInFlight;
  }

  /** Hands owed messages to mqtt.js while there is room: clears first (they free the broker). */
  private pump(): void {
    this.pumping = true;
    try {
      while (this.hasRoom()) {
        const clear = this.pendingClears.values().next();
        if (!clear.done) {
          this.pendingClears.delete(clear.value);
          this.clear(clear.value);
          continue;
        }
        const next = this.dirty.values().next();
        if (next.done) return;
        this.dirty.delete(next.value);
        const task = this.options.getTask(next.value);
        if (task) this.send(task);
      }
    } finally {
      this.pumping = false;
    }
  }

  private send(task: Readonly<Task>): void {
    this.seq += 1;
    const { ns, deviceId, bootId, link } = this.options;
    const message = statusMessage(task, deviceId, bootId, this.seq);
    this.atBroker.add(task.id);
    this.dirty.delete(task.id);
    this.handOver();
    link.publish(
      topics.taskStatus(ns, deviceId, task.id),
      JSON.stringify(message),
      { retain: true },
      'status',
      this.onDone,
    );
  }

  private clear(id: number): void {
    const { ns, deviceId, link } = this.options;
    this.atBroker.delete(id);
    this.handOver();
    // [MQTT-3.3.1-10]: a zero-byte retained message removes the retained message of the topic.
    // An empty string, not a Buffer: mqtt.js copies a Buffer payload into its outgoing store and
    // keeps the copy until the PUBACK (a string is shared), one Buffer fewer per task to promote
    // under a flood (docs/benchmarks.md, "Heap under floods").
    link.publish(topics.taskStatus(ns, deviceId, id), '', { retain: true }, 'clear', this.onDone);
    this.options.logger.debug({ taskId: id }, 'cleared status topic of evicted task');
  }

  private handOver(): void {
    this.inFlight += 1;
    if (this.inFlight > this.inFlightPeak) this.inFlightPeak = this.inFlight;
  }
}
