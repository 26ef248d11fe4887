/**
 * Write-behind of the job engine's history changes (docs/decisions/history-write-window.md):
 * results written within `commitIntervalMs` go in one SQLite transaction, and their events are
 * emitted after it commits, so nothing is announced before it is on disk. A caller that needs the
 * changes on disk at once (before publishing a script, before an API read) flushes. A refused
 * commit keeps its writes and retries them (retryLater).
 */
import type { Logger } from '../src/logger.ts';
import type { JobHistory, JobState } from './job-history.ts';
import type { JobStatus, StoredResult } from './job-types.ts';

/** Default window in which results are gathered into one transaction. */
export const DEFAULT_COMMIT_INTERVAL_MS = 20;
/** After a refused commit, the first retry's delay; it doubles up to HISTORY_RETRY_MAX_MS. */
export const HISTORY_RETRY_MS = 1000;
export const HISTORY_RETRY_MAX_MS = 30_000;

/**
 * Refusals that pass: the file locked by another process past the busy wait, a full disk, an I/O
 * error. Others (a closed database, a constraint) would fail again on every retry.
 */
function passing(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED|FULL|IOERR)/.test(code);
}

export class HistoryBatch {
  private readonly history: JobHistory;
  private readonly logger: Logger;
  private readonly commitIntervalMs: number;
  private writes: Array<() => void> = [];
  private announcements: Array<() => void> = [];
  /** A flush at the end of this turn (a job's status, an announcement with nothing to write). */
  private scheduled: NodeJS.Immediate | undefined;
  /** A flush at the end of the window (results). */
  private windowTimer: NodeJS.Timeout | undefined;
  /** Announcing: a flush from a listener commits its writes and leaves announcing to the outer loop. */
  private announcing = false;
  /** The delay before the next retry of writes the database refused (grown: a retry waits). */
  private retryMs = HISTORY_RETRY_MS;

  constructor(history: JobHistory, logger: Logger, commitIntervalMs = DEFAULT_COMMIT_INTERVAL_MS) {
    this.history = history;
    this.logger = logger;
    this.commitIntervalMs = commitIntervalMs;
  }

  saveResult(jobId: string, result: StoredResult): void {
    this.writes.push(() => this.history.saveResult(jobId, result));
    this.scheduleWindow();
  }

  /** A job's status: committed and announced at the end of this turn, not of the window. */
  saveStatus(jobId: string, status: JobStatus, endedAt: string | undefined): void {
    this.writes.push(() => this.history.saveStatus(jobId, status, endedAt));
    this.scheduleTurn();
  }

  /** A job's own state: committed and announced at the end of this turn, not of the window. */
  saveState(jobId: string, state: JobState): void {
    const copy = { ...state };
    this.writes.push(() => this.history.saveState(jobId, copy));
    this.scheduleTurn();
  }

  /** A result added to a running (continuous) job. */
  addResult(jobId: string, result: StoredResult): void {
    this.writes.push(() => this.history.addResult(jobId, result));
    this.scheduleTurn();
  }

  /** Runs `announce` once every change queued before it is committed. */
  afterCommit(announce: () => void): void {
    this.announcements.push(announce);
    if (this.writes.length === 0) this.scheduleTurn();
  }

  /** Nothing stays scheduled (the engine flushed before). */
  stop(): void {
    this.cancelScheduled();
  }

  /**
   * Before a read: commits what is queued unless the database refused it lately (the retry writes
   * it); announced changes are committed already, so the read stays consistent.
   */
  flushForRead(): void {
    // A retry waits: the reads do not try the writes again meanwhile.
    if (this.retryMs > HISTORY_RETRY_MS) return;
    try {
      this.flush();
    } catch (error) {
      if (!passing(error)) throw error;
    }
  }

  /**
   * Commits what is queued now (throws if the database refuses: the caller must not publish
   * then); the announcements stay for the end of the turn, after whatever the caller does next.
   */
  commitNow(): void {
    this.commit();
    if (this.announcements.length > 0) this.scheduleTurn();
  }

  /**
   * Commits what is queued (throws if the database refuses), then runs the announcements,
   * including those queued meanwhile.
   */
  flush(): void {
    this.cancelScheduled();
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

  private commit(): void {
    if (this.writes.length === 0) return;
    const writes = this.writes;
    this.writes = [];
    try {
      this.history.transaction(() => {
        for (const change of writes) change();
      });
      this.retryMs = HISTORY_RETRY_MS;
    } catch (error) {
      const message = (error as Error).message;
      if (!passing(error)) {
        this.logger.error({ err: message, dropped: writes.length }, 'writing the job history failed');
        throw error;
      }
      // The transaction rolled back whole: its writes go back in front of those queued since, to
      // be written again. Each writes a whole row, so the last still wins.
      this.writes = writes.concat(this.writes);
      this.logger.error(
        {
          err: message,
          code: (error as { code?: string }).code,
          pending: this.writes.length,
          retryInMs: this.retryMs,
        },
        'writing the job history failed; writing it again later',
      );
      this.retryLater();
      throw error;
    }
  }

  /**
   * Writes that the database refused are written again later: 1 s after the first refusal,
   * each further refusal doubling the wait up to 30 s, whoever's flush was refused (a job's
   * status change still tries at the end of its turn). Dropped, they would leave a job that
   * ended shown IN_PROGRESS until the next restart.
   */
  private retryLater(): void {
    this.cancelScheduled();
    this.windowTimer = setTimeout(() => this.scheduledFlush(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, HISTORY_RETRY_MAX_MS);
  }

  private cancelScheduled(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
  }

  private scheduleWindow(): void {
    if (this.scheduled !== undefined || this.windowTimer !== undefined) return;
    this.windowTimer = setTimeout(() => this.scheduledFlush(), this.commitIntervalMs);
  }

  private scheduleTurn(): void {
    if (this.scheduled !== undefined) return;
    clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
    this.scheduled = setImmediate(() => this.scheduledFlush());
  }

  /** A flush nobody waits for: a refusal is logged and retried by commit(). */
  private scheduledFlush(): void {
    try {
      this.flush();
    } catch {
      // commit() logged it and will write again.
    }
  }
}
