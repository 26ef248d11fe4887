/**
 * Write-behind of the job engine's history changes (docs/decisions.md, "Controller service":
 * history writes, one transaction per turn). The changes made in one turn of the event loop are
 * written at the end of the turn in ONE SQLite transaction, then the events announcing them are
 * emitted, in order: nothing is announced before it is committed. A caller that needs the
 * changes on disk at once flushes: a job before publishing its script (a result is marked sent
 * before it is sent, so a controller killed at any point resumes without a double run), and
 * every read for the API.
 *
 * A job to 500 registers makes about 1,000 changes; one transaction each cost about 0.1 ms of
 * the event loop apiece (docs/benchmarks.md, "Controller service").
 */
import type { Logger } from '../src/logger.ts';
import type { JobHistory } from './job-history.ts';
import type { JobStatus, StoredResult } from './job-types.ts';

export class HistoryBatch {
  private readonly history: JobHistory;
  private readonly logger: Logger;
  private writes: Array<() => void> = [];
  private announcements: Array<() => void> = [];
  private scheduled: NodeJS.Immediate | undefined;
  /** Announcing: a flush from a listener commits its writes and leaves announcing to the outer loop. */
  private announcing = false;

  constructor(history: JobHistory, logger: Logger) {
    this.history = history;
    this.logger = logger;
  }

  saveResult(jobId: string, result: StoredResult): void {
    this.write(() => this.history.saveResult(jobId, result));
  }

  saveStatus(jobId: string, status: JobStatus, endedAt: string | undefined): void {
    this.write(() => this.history.saveStatus(jobId, status, endedAt));
  }

  /** Runs `announce` once every change queued before it is committed. */
  afterCommit(announce: () => void): void {
    this.announcements.push(announce);
    this.schedule();
  }

  /**
   * Commits what is queued now (throws if the database refuses: the caller must not publish
   * then); the announcements stay for the end of the turn, after whatever the caller does next.
   */
  commitNow(): void {
    this.commit();
  }

  /**
   * Commits what is queued (throws if the database refuses), then runs the announcements,
   * including those queued meanwhile.
   */
  flush(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.commit();
    if (this.announcing) return;
    this.announcing = true;
    try {
      while (this.announcements.length > 0) {
        const announcements = this.announcements;
        this.announcements = [];
        for (const announce of announcements) this.announce(announce);
        this.commit();
      }
    } finally {
      this.announcing = false;
    }
  }

  /** A listener that throws must not keep the others from hearing of the change. */
  private announce(announce: () => void): void {
    try {
      announce();
    } catch (error) {
      this.logger.error({ err: (error as Error).message }, 'a job event listener threw');
    }
  }

  private write(change: () => void): void {
    this.writes.push(change);
    this.schedule();
  }

  private commit(): void {
    if (this.writes.length === 0) return;
    const writes = this.writes;
    this.writes = [];
    this.history.transaction(() => {
      for (const change of writes) change();
    });
  }

  private schedule(): void {
    if (this.scheduled !== undefined) return;
    this.scheduled = setImmediate(() => {
      this.scheduled = undefined;
      try {
        this.flush();
      } catch (error) {
        this.logger.error({ err: (error as Error).message }, 'writing the job history failed');
      }
    });
  }
}
