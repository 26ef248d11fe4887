/**
 * MQTT idempotency (docs/mqtt.md): a `requestId` seen in the last N submissions (default 1000)
 * executes nothing new, since QoS 1 is "at least once" ([MQTT-4.3.2]). A bounded FIFO; entries
 * outlive their task's eviction (keeping a small copy of it), and a cancel for an unseen requestId
 * takes a place too, so a cancel that overtakes its script still wins.
 */
import type { Task } from './task.ts';

/** Default of `--request-id-memory` (docs/mqtt.md: the last 1000 submissions). */
export const DEFAULT_REQUEST_ID_MEMORY = 1000;

export interface TaskRecord {
  readonly kind: 'task';
  /** The task while the queue holds it; after its eviction, a copy without report or error. */
  task: Readonly<Task>;
  /** sha256 of the first submission's script, to tell a repeat that carries another one. */
  readonly scriptHash: string;
}

/** Cancelled before any script with this requestId arrived. */
export interface CancelledRecord {
  readonly kind: 'cancelled';
  readonly at: Date;
}

export type RequestRecord = TaskRecord | CancelledRecord;

export class RequestIdMemory {
  private readonly limit: number;
  private readonly records = new Map<string, RequestRecord>();

  constructor(limit = DEFAULT_REQUEST_ID_MEMORY) {
    this.limit = limit;
  }

  get size(): number {
    return this.records.size;
  }

  get(requestId: string): RequestRecord | undefined {
    return this.records.get(requestId);
  }

  remember(requestId: string, record: RequestRecord): void {
    this.records.delete(requestId);
    this.records.set(requestId, record);
    while (this.records.size > this.limit) {
      const oldest = this.records.keys().next();
      if (oldest.done) break;
      this.records.delete(oldest.value);
    }
  }

  /** The task left the queue: keep what a repeat needs (id, final state), drop its report. */
  evicted(task: Readonly<Task>): void {
    if (task.requestId === undefined) return;
    const record = this.records.get(task.requestId);
    if (record?.kind !== 'task' || record.task !== task) return;
    record.task = Object.freeze({
      id: task.id,
      script: '',
      source: task.source,
      requestId: task.requestId,
      state: task.state,
      queuedAt: task.queuedAt,
      ...(task.startedAt && { startedAt: task.startedAt }),
      ...(task.finishedAt && { finishedAt: task.finishedAt }),
    });
  }
}
