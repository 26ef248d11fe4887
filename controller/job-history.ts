/**
 * Jobs and their results in the SQLite history (controller/history-db.ts). The engine writes
 * the changes of one event-loop turn in one transaction (controller/history-batch.ts); a result
 * is marked sent before its script is published, so a controller killed at any point resumes
 * without a double run (docs/controller.md, "History, restart and resume"). Only jobs still
 * running are held in memory by the engine; everything else is read from here on demand, so
 * history does not grow the heap.
 */
import { type HistoryDb, prepare } from './history-db.ts';
import {
  type AbortRule,
  addToCounts,
  emptyCounts,
  type Job,
  type JobCounts,
  type JobStatus,
  type JobSummary,
  type JobTarget,
  publicResult,
  type ResultStatus,
  type Rollout,
  type StoredResult,
  withOutcome,
} from './job-types.ts';

interface JobRow {
  seq: number;
  job_id: string;
  name: string | null;
  created_by: string;
  created_at: string;
  ended_at: string | null;
  status: string;
  script: string;
  target: string;
  rollout: string | null;
  abort_rule: string | null;
  deadline_at: string;
}

interface ResultRow {
  device_id: string;
  status: string;
  task_id: number | null;
  report: string | null;
  error: string | null;
  sent_at: string | null;
  ended_at: string | null;
  sent_boot: string | null;
}

/** A job as stored, with its results and the bookkeeping the engine needs to resume it. */
export interface StoredJob extends Omit<JobSummary, 'counts'> {
  results: StoredResult[];
}

function toResult(row: ResultRow): StoredResult {
  return {
    deviceId: row.device_id,
    status: row.status as ResultStatus,
    ...(row.task_id !== null && { taskId: row.task_id }),
    ...(row.report !== null && { report: row.report }),
    ...(row.error !== null && { error: row.error }),
    ...(row.sent_at !== null && { sentAt: row.sent_at }),
    ...(row.ended_at !== null && { endedAt: row.ended_at }),
    ...(row.sent_boot !== null && { sentBoot: row.sent_boot }),
  };
}

function toSummary(row: JobRow, counts: JobCounts): JobSummary {
  return withOutcome({
    jobId: row.job_id,
    ...(row.name !== null && { name: row.name }),
    createdBy: row.created_by,
    createdAt: row.created_at,
    ...(row.ended_at !== null && { endedAt: row.ended_at }),
    status: row.status as JobStatus,
    script: row.script,
    target: JSON.parse(row.target) as JobTarget,
    ...(row.rollout !== null && { rollout: JSON.parse(row.rollout) as Rollout }),
    ...(row.abort_rule !== null && { abort: JSON.parse(row.abort_rule) as AbortRule }),
    deadlineAt: row.deadline_at,
    counts,
  });
}

export class JobHistory {
  private readonly db: HistoryDb;
  private readonly statements;
  /** jobId -> seq of the jobs whose results were written lately (a job writes each result twice). */
  private readonly seqs = new Map<string, number>();

  constructor(db: HistoryDb) {
    this.db = db;
    this.statements = {
      insertJob: prepare(
        db,
        `INSERT INTO jobs (job_id, name, created_by, created_at, status, script, target, rollout, abort_rule,
           deadline_at, idempotency_key, request_hash)
         VALUES (@jobId, @name, @createdBy, @createdAt, @status, @script, @target, @rollout, @abort,
           @deadlineAt, @idempotencyKey, @requestHash)`,
      ),
      insertResult: prepare(
        db,
        `INSERT INTO results (job_seq, position, device_id, status, sent_at, sent_boot) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      updateResult: prepare(
        db,
        `UPDATE results SET status = ?, task_id = ?, report = ?, error = ?, sent_at = ?, ended_at = ?,
           sent_boot = ? WHERE job_seq = ? AND device_id = ?`,
      ),
      seqOf: prepare(db, `SELECT seq FROM jobs WHERE job_id = ?`).pluck(),
      updateJob: prepare(db, `UPDATE jobs SET status = ?, ended_at = ? WHERE job_id = ?`),
      jobById: prepare(db, `SELECT * FROM jobs WHERE job_id = ?`),
      jobByKey: prepare(db, `SELECT job_id, request_hash FROM jobs WHERE idempotency_key = ?`),
      resultsOf: prepare(db, `SELECT * FROM results WHERE job_seq = ? ORDER BY position`),
      countsOf: prepare(db, `SELECT status, count(*) AS n FROM results WHERE job_seq = ? GROUP BY status`),
      newest: prepare(db, `SELECT * FROM jobs ORDER BY seq DESC LIMIT ?`),
      newestBefore: prepare(db, `SELECT * FROM jobs WHERE seq < ? ORDER BY seq DESC LIMIT ?`),
      unfinished: prepare(
        db,
        `SELECT * FROM jobs WHERE status = 'IN_PROGRESS' OR seq IN
           (SELECT DISTINCT job_seq FROM results WHERE status IN ('PENDING', 'RUNNING'))
         ORDER BY seq`,
      ),
      count: prepare(db, `SELECT count(*) AS n FROM jobs`),
    };
  }

  /** Stores a new job and its results (PENDING, or RUNNING when sent at once) in one transaction. */
  insert(job: StoredJob, idempotency?: { key: string; hash: string }): void {
    this.db.transaction(() => {
      const info = this.statements.insertJob.run({
        jobId: job.jobId,
        name: job.name ?? null,
        createdBy: job.createdBy,
        createdAt: job.createdAt,
        status: job.status,
        script: job.script,
        target: JSON.stringify(job.target),
        rollout: job.rollout ? JSON.stringify(job.rollout) : null,
        abort: job.abort ? JSON.stringify(job.abort) : null,
        deadlineAt: job.deadlineAt,
        idempotencyKey: idempotency?.key ?? null,
        requestHash: idempotency?.hash ?? null,
      });
      const seq = Number(info.lastInsertRowid);
      job.results.forEach((result, position) => {
        this.statements.insertResult.run(
          seq,
          position,
          result.deviceId,
          result.status,
          result.sentAt ?? null,
          result.sentBoot ?? null,
        );
      });
    })();
  }

  /** The job that used an Idempotency-Key, and the hash of what it was asked for. */
  byIdempotencyKey(key: string): { jobId: string; hash: string } | undefined {
    const row = this.statements.jobByKey.get(key) as { job_id: string; request_hash: string } | undefined;
    return row ? { jobId: row.job_id, hash: row.request_hash } : undefined;
  }

  /** Runs `changes` in one transaction (controller/history-batch.ts writes a turn's changes so). */
  transaction(changes: () => void): void {
    this.db.transaction(changes)();
  }

  saveResult(jobId: string, result: StoredResult): void {
    const seq = this.seqOf(jobId);
    if (seq === undefined) return; // no such job: nothing to update, as the UPDATE would find
    this.statements.updateResult.run(
      result.status,
      result.taskId ?? null,
      result.report ?? null,
      result.error ?? null,
      result.sentAt ?? null,
      result.endedAt ?? null,
      result.sentBoot ?? null,
      seq,
      result.deviceId,
    );
  }

  private seqOf(jobId: string): number | undefined {
    let seq = this.seqs.get(jobId);
    if (seq === undefined) {
      seq = this.statements.seqOf.get(jobId) as number | undefined;
      if (seq === undefined) return undefined;
      // A few jobs run at once; the cache stays small (the oldest entry goes first).
      if (this.seqs.size >= 64) this.seqs.delete(this.seqs.keys().next().value!);
      this.seqs.set(jobId, seq);
    }
    return seq;
  }

  saveStatus(jobId: string, status: JobStatus, endedAt: string | undefined): void {
    this.statements.updateJob.run(status, endedAt ?? null, jobId);
  }

  /** The job with its results, for the API. */
  get(jobId: string): Job | undefined {
    const row = this.statements.jobById.get(jobId) as JobRow | undefined;
    if (!row) return undefined;
    const results = (this.statements.resultsOf.all(row.seq) as ResultRow[]).map(toResult);
    const counts = emptyCounts();
    for (const result of results) addToCounts(counts, result.status);
    return { ...toSummary(row, counts), results: results.map(publicResult) };
  }

  /** Newest first; `before` is a jobId (the last one of the previous page). undefined: unknown `before`. */
  list(limit: number, before?: string): JobSummary[] | undefined {
    let rows: JobRow[];
    if (before !== undefined) {
      const anchor = this.statements.jobById.get(before) as JobRow | undefined;
      if (!anchor) return undefined;
      rows = this.statements.newestBefore.all(anchor.seq, limit) as JobRow[];
    } else {
      rows = this.statements.newest.all(limit) as JobRow[];
    }
    return rows.map((row) => toSummary(row, this.countsOf(row.seq)));
  }

  /** Jobs a restarted engine must pick up: IN_PROGRESS, or ended with results still open. */
  unfinished(): StoredJob[] {
    return (this.statements.unfinished.all() as JobRow[]).map((row) => {
      const { counts: _counts, outcome: _outcome, ...summary } = toSummary(row, emptyCounts());
      return { ...summary, results: (this.statements.resultsOf.all(row.seq) as ResultRow[]).map(toResult) };
    });
  }

  count(): number {
    return (this.statements.count.get() as { n: number }).n;
  }

  private countsOf(seq: number): JobCounts {
    const counts = emptyCounts();
    for (const { status, n } of this.statements.countsOf.all(seq) as { status: ResultStatus; n: number }[]) {
      addToCounts(counts, status, n);
    }
    return counts;
  }
}
