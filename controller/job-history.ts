/**
 * Jobs and their results in the SQLite history (history-db.ts, written through history-batch.ts;
 * docs/controller.md, "History, restart and resume"). Only running jobs are held in memory by the
 * engine; everything else is read from here on demand, so history does not grow the heap.
 */

import type Database from 'better-sqlite3';
import { type HistoryDb, prepare } from './history-db.ts';
import { type JobQuery, jobConditions, NOTHING } from './job-query.ts';
import {
  type AbortRule,
  type Approval,
  addToCounts,
  attemptsOf,
  emptyCounts,
  type Job,
  type JobCounts,
  type JobStatus,
  type JobSummary,
  type JobTarget,
  type JobWindow,
  OPEN_JOB_STATUSES,
  publicResult,
  type ResultStatus,
  type RetryRule,
  type Rollout,
  type ScriptRef,
  type StoredResult,
  withOutcome,
} from './job-types.ts';
import { deviceKey, splitKey } from './store-keys.ts';
import { waveProgress } from './waves.ts';

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
  retry: string | null;
  start_at: string | null;
  window: string | null;
  end_at: string | null;
  schedule_id: string | null;
  rerun_of: string | null;
  paused_reason: string | null;
  open_wave: number;
  script_ref: string | null;
  decided_by: string | null;
  decided_at: string | null;
  decision_comment: string | null;
}

interface ResultRow {
  store: string;
  device_id: string;
  status: string;
  task_id: number | null;
  report: string | null;
  error: string | null;
  sent_at: string | null;
  ended_at: string | null;
  sent_boot: string | null;
  attempts: number;
  next_attempt_at: string | null;
}

/** A job as stored, with its results and the bookkeeping the engine needs to resume it. */
export interface StoredJob extends Omit<JobSummary, 'counts' | 'wave'> {
  results: StoredResult[];
  /** With waves: the index of the last wave released (0: the first; default 0). */
  openWave?: number;
}

/** What changes of a job itself (not of its results) while it runs. */
export interface JobState {
  status: JobStatus;
  endedAt?: string | undefined;
  pausedReason?: string | undefined;
  openWave: number;
}

/** A register's key as the results table keeps it: its store ('' with one store) and its id. */
function storeAndId(key: string): [string, string] {
  const { store, deviceId } = splitKey(key);
  return [store ?? '', deviceId];
}

function toResult(row: ResultRow): StoredResult {
  return {
    deviceId: deviceKey(row.store === '' ? undefined : row.store, row.device_id),
    status: row.status as ResultStatus,
    ...(row.task_id !== null && { taskId: row.task_id }),
    ...(row.report !== null && { report: row.report }),
    ...(row.error !== null && { error: row.error }),
    ...(row.sent_at !== null && { sentAt: row.sent_at }),
    ...(row.ended_at !== null && { endedAt: row.ended_at }),
    ...(row.sent_boot !== null && { sentBoot: row.sent_boot }),
    attempts: row.attempts,
    ...(row.next_attempt_at !== null && { nextAttemptAt: row.next_attempt_at }),
  };
}

function toSummary(row: JobRow, counts: JobCounts): JobSummary {
  const rollout = row.rollout !== null ? (JSON.parse(row.rollout) as Rollout) : undefined;
  const wave = waveProgress(rollout, counts.total, row.open_wave);
  return withOutcome({
    jobId: row.job_id,
    ...(row.name !== null && { name: row.name }),
    createdBy: row.created_by,
    createdAt: row.created_at,
    ...(row.ended_at !== null && { endedAt: row.ended_at }),
    status: row.status as JobStatus,
    script: row.script,
    target: JSON.parse(row.target) as JobTarget,
    ...(rollout !== undefined && { rollout }),
    ...(row.abort_rule !== null && { abort: JSON.parse(row.abort_rule) as AbortRule }),
    ...(row.retry !== null && { retry: JSON.parse(row.retry) as RetryRule }),
    ...(row.start_at !== null && { startAt: row.start_at }),
    ...(row.window !== null && { window: JSON.parse(row.window) as JobWindow }),
    ...(row.end_at !== null && { endAt: row.end_at }),
    ...(row.schedule_id !== null && { scheduleId: row.schedule_id }),
    ...(row.rerun_of !== null && { rerunOf: row.rerun_of }),
    ...(row.paused_reason !== null && { pausedReason: row.paused_reason }),
    ...(wave !== undefined && { wave }),
    deadlineAt: row.deadline_at,
    ...(row.script_ref !== null && { scriptRef: JSON.parse(row.script_ref) as ScriptRef }),
    ...(row.decided_by !== null && { approval: approvalOf(row) }),
    counts,
  });
}

function approvalOf(row: JobRow): Approval {
  return {
    decision: row.status === 'DENIED' ? 'denied' : 'approved',
    by: row.decided_by!,
    at: row.decided_at!,
    ...(row.decision_comment !== null && { comment: row.decision_comment }),
  };
}

export class JobHistory {
  private readonly db: HistoryDb;
  private readonly statements;
  /** jobId -> seq of the jobs whose results were written lately (a job writes each result twice). */
  private readonly seqs = new Map<string, number>();
  private readonly listStatements = new Map<string, Database.Statement>();

  constructor(db: HistoryDb) {
    this.db = db;
    this.statements = {
      insertJob: prepare(
        db,
        `INSERT INTO jobs (job_id, name, created_by, created_at, status, script, target, rollout, abort_rule,
           deadline_at, idempotency_key, request_hash, retry, start_at, window, end_at, schedule_id,
           rerun_of, paused_reason, open_wave, script_ref)
         VALUES (@jobId, @name, @createdBy, @createdAt, @status, @script, @target, @rollout, @abort,
           @deadlineAt, @idempotencyKey, @requestHash, @retry, @startAt, @window, @endAt, @scheduleId,
           @rerunOf, @pausedReason, @openWave, @scriptRef)`,
      ),
      insertResult: prepare(
        db,
        `INSERT INTO results (job_seq, position, store, device_id, status, sent_at, sent_boot, attempts, next_attempt_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      updateResult: prepare(
        db,
        `UPDATE results SET status = ?, task_id = ?, report = ?, error = ?, sent_at = ?, ended_at = ?,
           sent_boot = ?, attempts = ?, next_attempt_at = ? WHERE job_seq = ? AND store = ? AND device_id = ?`,
      ),
      seqOf: prepare(db, `SELECT seq FROM jobs WHERE job_id = ?`).pluck(),
      updateJob: prepare(db, `UPDATE jobs SET status = ?, ended_at = ? WHERE job_id = ?`),
      updateState: prepare(
        db,
        `UPDATE jobs SET status = ?, ended_at = ?, paused_reason = ?, open_wave = ? WHERE job_id = ?`,
      ),
      resultCount: prepare(db, `SELECT count(*) FROM results WHERE job_seq = ?`).pluck(),
      decide: prepare(
        db,
        `UPDATE jobs SET status = ?, ended_at = ?, deadline_at = ?, decided_by = ?, decided_at = ?,
           decision_comment = ? WHERE job_id = ? AND status = 'WAITING_FOR_APPROVAL'`,
      ),
      jobById: prepare(db, `SELECT * FROM jobs WHERE job_id = ?`),
      jobByKey: prepare(db, `SELECT job_id, request_hash FROM jobs WHERE idempotency_key = ?`),
      resultsOf: prepare(db, `SELECT * FROM results WHERE job_seq = ? ORDER BY position`),
      countsOf: prepare(db, `SELECT status, count(*) AS n FROM results WHERE job_seq = ? GROUP BY status`),
      unfinished: prepare(
        db,
        `SELECT * FROM jobs WHERE status IN (${OPEN_JOB_STATUSES.map((status) => `'${status}'`).join(', ')}) OR
           (status != 'WAITING_FOR_APPROVAL' AND seq IN
           (SELECT DISTINCT job_seq FROM results WHERE status IN ('PENDING', 'RUNNING')))
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
        retry: job.retry ? JSON.stringify(job.retry) : null,
        startAt: job.startAt ?? null,
        window: job.window ? JSON.stringify(job.window) : null,
        endAt: job.endAt ?? null,
        scheduleId: job.scheduleId ?? null,
        rerunOf: job.rerunOf ?? null,
        pausedReason: job.pausedReason ?? null,
        openWave: job.openWave ?? 0,
        scriptRef: job.scriptRef ? JSON.stringify(job.scriptRef) : null,
      });
      const seq = Number(info.lastInsertRowid);
      for (const [position, result] of job.results.entries()) this.insertResult(seq, position, result);
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
      attemptsOf(result),
      result.nextAttemptAt ?? null,
      seq,
      ...storeAndId(result.deviceId),
    );
  }

  /** A register that joined a continuous job's target: its result, after the others. */
  addResult(jobId: string, result: StoredResult): void {
    const seq = this.seqOf(jobId);
    if (seq === undefined) return;
    this.insertResult(seq, this.statements.resultCount.get(seq) as number, result);
  }

  private insertResult(seq: number, position: number, result: StoredResult): void {
    this.statements.insertResult.run(
      seq,
      position,
      ...storeAndId(result.deviceId),
      result.status,
      result.sentAt ?? null,
      result.sentBoot ?? null,
      attemptsOf(result),
      result.nextAttemptAt ?? null,
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

  /**
   * Records an approver's decision on a waiting job: approved, it is IN_PROGRESS with a new
   * deadline; denied, it ends DENIED. False when the job was not waiting (any more).
   */
  decide(jobId: string, status: 'IN_PROGRESS' | 'DENIED', approval: Approval, deadlineAt: string): boolean {
    const endedAt = status === 'DENIED' ? approval.at : null;
    const info = this.statements.decide.run(
      status,
      endedAt,
      deadlineAt,
      approval.by,
      approval.at,
      approval.comment ?? null,
      jobId,
    );
    return info.changes === 1;
  }

  saveStatus(jobId: string, status: JobStatus, endedAt: string | undefined): void {
    this.statements.updateJob.run(status, endedAt ?? null, jobId);
  }

  saveState(jobId: string, state: JobState): void {
    this.statements.updateState.run(
      state.status,
      state.endedAt ?? null,
      state.pausedReason ?? null,
      state.openWave,
      jobId,
    );
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

  /**
   * Newest first, matching `query`; `before` is a jobId (the last one of the previous page).
   * undefined: unknown `before`.
   */
  list(limit: number, before?: string, query: JobQuery = {}): JobSummary[] | undefined {
    const { conditions, params } = jobConditions(query);
    if (before !== undefined) {
      const anchor = this.statements.jobById.get(before) as JobRow | undefined;
      if (!anchor) return undefined;
      conditions.push('seq < ?');
      params.push(anchor.seq);
    }
    if (conditions.includes(NOTHING)) return [];
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const rows = this.listStatement(`SELECT * FROM jobs ${where} ORDER BY seq DESC LIMIT ?`).all(
      ...params,
      limit,
    ) as JobRow[];
    return rows.map((row) => toSummary(row, this.countsOf(row.seq)));
  }

  /** One prepared statement per shape of filter (a few dozen at most: history-db.ts `retained`). */
  private listStatement(sql: string): Database.Statement {
    let statement = this.listStatements.get(sql);
    if (!statement) {
      statement = prepare(this.db, sql);
      this.listStatements.set(sql, statement);
    }
    return statement;
  }

  /** Jobs a restarted engine must pick up: IN_PROGRESS, or ended with results still open. */
  unfinished(): StoredJob[] {
    return (this.statements.unfinished.all() as JobRow[]).map((row) => {
      const { counts: _counts, wave: _wave, outcome: _outcome, ...summary } = toSummary(row, emptyCounts());
      const results = (this.statements.resultsOf.all(row.seq) as ResultRow[]).map(toResult);
      return { ...summary, results, openWave: row.open_wave };
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
