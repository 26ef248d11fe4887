/**
 * Keeping the history to `--history-days` (docs/controller.md, "Retention and backup"): at start
 * and daily, old ended jobs, their results and ended webhook deliveries are deleted and the purge
 * audited; freed pages go back by incremental vacuum, never a blocking VACUUM
 * (docs/decisions/history-retention.md).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from '../src/logger.ts';
import type { AuditLog } from './audit-log.ts';
import { type HistoryDb, prepare } from './history-db.ts';
import type { PacingClock } from './rollout.ts';

export const DAY_MS = 24 * 3_600_000;
/** Jobs deleted per transaction: the engine writes between two (a job has up to 10,000 results). */
const JOBS_PER_STEP = 20;
/** Webhook deliveries deleted per transaction. */
const DELIVERIES_PER_STEP = 1000;
/** Pages given back per turn (4 KiB each). */
const VACUUM_PAGES_PER_STEP = 2048;

export interface RetentionOptions {
  db: HistoryDb;
  audit: AuditLog;
  /** Keep jobs that ended within this many days. */
  days: number;
  clock: PacingClock;
  logger: Logger;
}

export interface PurgeOutcome {
  jobs: number;
  results: number;
  /** Ended webhook deliveries of events before `before`. */
  deliveries: number;
  /** Jobs that ended before this instant were deleted. */
  before: string;
}

export class HistoryRetention {
  private readonly options: RetentionOptions;
  private readonly statements;
  private timer: unknown;
  private running: Promise<PurgeOutcome> | undefined;
  private stopped = false;

  constructor(options: RetentionOptions) {
    this.options = options;
    const { db } = options;
    this.statements = {
      oldest: prepare(
        db,
        `SELECT seq FROM jobs WHERE ended_at IS NOT NULL AND ended_at < ? ORDER BY seq LIMIT ${JOBS_PER_STEP}`,
      ).pluck(),
      deleteResults: prepare(db, 'DELETE FROM results WHERE job_seq = ?'),
      deleteJob: prepare(db, 'DELETE FROM jobs WHERE seq = ?'),
      // In seq order, oldest first: a step stops at the first DELIVERIES_PER_STEP it finds.
      deleteDeliveries: prepare(
        db,
        `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries
           WHERE created_at < ? AND status IN ('DELIVERED', 'FAILED') ORDER BY seq LIMIT ${DELIVERIES_PER_STEP})`,
      ),
      freePages: prepare(db, 'PRAGMA freelist_count').pluck(),
    };
  }

  /** Purges now, then every day. */
  start(): void {
    this.stopped = false;
    void this.purge().catch(() => {});
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Deletes the jobs that ended more than `days` days ago; one purge at a time. */
  purge(): Promise<PurgeOutcome> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
      if (!this.stopped)
        this.timer = this.options.clock.setTimeout(() => void this.purge().catch(() => {}), DAY_MS);
    });
    return this.running;
  }

  private async run(): Promise<PurgeOutcome> {
    const { db, audit, clock, logger, days } = this.options;
    if (this.timer !== undefined) clock.clearTimeout(this.timer);
    this.timer = undefined;
    const cutoff = clock.now() - days * DAY_MS;
    const before = new Date(cutoff).toISOString();
    let jobs = 0;
    let results = 0;
    let deliveries = 0;
    try {
      for (;;) {
        const seqs = this.statements.oldest.all(before) as number[];
        if (seqs.length === 0) break;
        db.transaction(() => {
          for (const seq of seqs) {
            results += this.statements.deleteResults.run(seq).changes;
            jobs += this.statements.deleteJob.run(seq).changes;
          }
        })();
        if (this.stopped) break;
        await nextTurn();
      }
      while (!this.stopped) {
        const deleted = this.statements.deleteDeliveries.run(cutoff).changes;
        deliveries += deleted;
        if (deleted < DELIVERIES_PER_STEP) break;
        await nextTurn();
      }
      // exec, not a statement: each step of `incremental_vacuum` frees a single page.
      while (!this.stopped && (this.statements.freePages.get() as number) > 0) {
        db.exec(`PRAGMA incremental_vacuum(${VACUUM_PAGES_PER_STEP})`);
        await nextTurn();
      }
    } catch (error) {
      logger.error(
        { err: error, deletedJobs: jobs, deletedDeliveries: deliveries },
        'purging the job history failed; trying again tomorrow',
      );
    }
    audit.record({
      user: 'system',
      address: '',
      action: 'history_purged',
      detail: `${jobs} jobs, ${results} results and ${deliveries} webhook deliveries that ended before ${before} (--history-days ${days})`,
      at: new Date(clock.now()).toISOString(),
    });
    logger.info({ jobs, results, deliveries, before }, 'job history purged');
    return { jobs, results, deliveries, before };
  }
}
