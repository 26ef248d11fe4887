/**
 * The filters of the job list (docs/controller.md, "Search and export") as SQL conditions on
 * `jobs`. An ended job's outcome is read from its results (every one FINISHED: SUCCEEDED; some:
 * PARTIAL; none: FAILED), each test an indexed look-up of the job's results.
 */
import { type JobStatus, RESULT_STATUSES } from './job-types.ts';

export type JobOutcome = 'SUCCEEDED' | 'PARTIAL' | 'FAILED';
export const JOB_OUTCOMES: readonly JobOutcome[] = ['SUCCEEDED', 'PARTIAL', 'FAILED'];

export interface JobQuery {
  status?: JobStatus;
  outcome?: JobOutcome;
  /** A substring of the name, any case (ASCII letters). */
  name?: string;
  createdBy?: string;
  /** Schedules and library scripts come with their features; until then no job has either. */
  scheduleId?: string;
  scriptId?: string;
  /** createdAt, from inclusive, to exclusive (ISO-8601 UTC, as stored). */
  from?: string;
  to?: string;
}

/** A condition no job meets: the caller answers an empty list without asking SQLite. */
export const NOTHING = '0';

// Each an index probe on results_by_status (status, job_seq): `status <> 'FINISHED'` would scan
// the job's results instead (bench "history").
const SOME_FINISHED = `EXISTS (SELECT 1 FROM results r WHERE r.status = 'FINISHED' AND r.job_seq = jobs.seq)`;
const SOME_NOT_FINISHED = `EXISTS (SELECT 1 FROM results r WHERE r.status IN (${RESULT_STATUSES.filter(
  (status) => status !== 'FINISHED',
)
  .map((status) => `'${status}'`)
  .join(', ')}) AND r.job_seq = jobs.seq)`;
const OUTCOME_SQL: Record<JobOutcome, string> = {
  SUCCEEDED: `NOT ${SOME_NOT_FINISHED}`,
  PARTIAL: `${SOME_FINISHED} AND ${SOME_NOT_FINISHED}`,
  FAILED: `NOT ${SOME_FINISHED}`,
};

export function jobConditions(query: JobQuery): { conditions: string[]; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  if (query.status !== undefined) {
    conditions.push('status = ?');
    params.push(query.status);
  }
  if (query.outcome !== undefined) {
    conditions.push('ended_at IS NOT NULL', OUTCOME_SQL[query.outcome]);
  }
  if (query.name !== undefined) {
    // instr() rather than LIKE: % and _ in the text are plain characters.
    conditions.push('instr(lower(name), lower(?)) > 0');
    params.push(query.name);
  }
  if (query.createdBy !== undefined) {
    conditions.push('created_by = ?');
    params.push(query.createdBy);
  }
  if (query.scheduleId !== undefined) {
    conditions.push('schedule_id = ?');
    params.push(query.scheduleId);
  }
  if (query.scriptId !== undefined) {
    conditions.push("json_extract(script_ref, '$.scriptId') = ?");
    params.push(query.scriptId);
  }
  if (query.from !== undefined) {
    conditions.push('created_at >= ?');
    params.push(query.from);
  }
  if (query.to !== undefined) {
    conditions.push('created_at < ?');
    params.push(query.to);
  }
  return { conditions, params };
}
