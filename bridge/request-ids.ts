/**
 * MQTT idempotency (contract section 3): a `requestId` seen in the last N submissions to this
 * device (default 1000) executes nothing new. QoS 1 is "at least once" ([MQTT-4.3.2]), so a
 * controller that retries, or a broker that redelivers with DUP set, must not run a script twice.
 *
 * Bounded FIFO over submissions (a repeat is not a new submission, so it does not refresh its
 * entry): the oldest entry is forgotten first. Entries outlive their task's eviction, so a late
 * repeat is still answered with the task's id and its last known status.
 */
import type { TaskStatus } from '../src/tasks/task.ts';

export interface RequestRecord {
  readonly taskId: number;
  /** sha256 of the script, to log a repeat that carries a different script. */
  readonly scriptHash: string;
  /** Last status the bridge saw for the task; answers repeats after the task was evicted. */
  status: TaskStatus;
}

export class RequestIdMemory {
  private readonly limit: number;
  private readonly records = new Map<string, RequestRecord>();

  constructor(limit = 1000) {
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

  /** Keeps the last known status current, so repeats after eviction still answer truthfully. */
  updateStatus(requestId: string, taskId: number, status: TaskStatus): void {
    const record = this.records.get(requestId);
    if (record && record.taskId === taskId) record.status = status;
  }

  clear(): void {
    this.records.clear();
  }
}
