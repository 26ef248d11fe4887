/**
 * A job's results as they stand, one per register, with the counts and the registers not sent
 * the script yet kept in step with every change (controller/job-run.ts decides the changes; the
 * history and the announcements follow them there).
 */
import type { StoredJob } from './job-history.ts';
import { addToCounts, countResults, type JobCounts, type StoredResult } from './job-types.ts';

export class JobLedger {
  private readonly results = new Map<string, StoredResult>();
  private readonly counts: JobCounts;
  /** Each register's place in the target (waves take them in this order). */
  private readonly positions = new Map<string, number>();
  /** Registers not sent the script yet (PENDING), in target order: what a send looks through. */
  readonly pending = new Set<string>();

  constructor(job: StoredJob) {
    for (const result of job.results) {
      this.positions.set(result.deviceId, this.positions.size);
      this.results.set(result.deviceId, result);
      if (result.status === 'PENDING') this.pending.add(result.deviceId);
    }
    this.counts = countResults(job.results);
  }

  get(deviceId: string): StoredResult | undefined {
    return this.results.get(deviceId);
  }

  position(deviceId: string): number {
    return this.positions.get(deviceId) ?? -1;
  }

  get size(): number {
    return this.results.size;
  }

  /** A register that joined a continuous job's target, after the others. */
  add(result: StoredResult): void {
    this.positions.set(result.deviceId, this.positions.size);
    this.results.set(result.deviceId, result);
    if (result.status === 'PENDING') this.pending.add(result.deviceId);
    addToCounts(this.counts, result.status);
  }

  values(): IterableIterator<StoredResult> {
    return this.results.values();
  }

  /** Registers running the job's script now (sent, no end yet): what the rollout limits count. */
  get running(): number {
    return this.counts.running;
  }

  /** A copy: announcements keep the counts of their moment. */
  countsNow(): JobCounts {
    return { ...this.counts };
  }

  /** Nothing is PENDING or RUNNING any more. */
  get allEnded(): boolean {
    return this.counts.pending + this.counts.running === 0;
  }

  /** Applies `fields` to the register's result; returns the new result. */
  update(deviceId: string, fields: Partial<StoredResult>): StoredResult {
    const previous = this.results.get(deviceId)!;
    const next: StoredResult = { ...previous, ...fields };
    this.results.set(deviceId, next);
    if (next.status !== 'PENDING') this.pending.delete(deviceId);
    else this.pending.add(deviceId);
    addToCounts(this.counts, previous.status, -1);
    addToCounts(this.counts, next.status);
    return next;
  }
}
