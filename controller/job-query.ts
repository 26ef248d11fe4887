/**
 * The filters of the job list (docs/controller.md, "Search and export") as SQL conditions on
 * `jobs`. An ended job's outcome is read from its results (every one FINISHED: SUCCEEDED; some:
 * PARTIAL; none: FAILED), each test an indexed look-up of the job's results.
 */
import { type JobOutcome, type JobStatus, RESULT_STATUSES } from './job-types.ts';

export interface JobQuery {
  status?: JobStatus;
  outcome?: JobOutcome;
  /** A substring of the name, any case (ASCII letters). */
  name?: string;
  createdBy?: string;
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

/** The filters that are one condition on a column each, with the value as its parameter. */
const COLUMN_FILTERS: readonly [keyof JobQuery, string][] = [
  ['status', 'status = ?'],
  // instr() rather than LIKE: % and _ in the text are plain characters.
  ['name', 'instr(lower(name), lower(?)) > 0'],
  ['createdBy', 'created_by = ?'],
  ['scheduleId', 'schedule_id = ?'],
  ['scriptId', "json_extract(script_ref, '$.scriptId') = ?"],
  ['from', 'created_at >= ?'],
  ['to', 'created_at < ?'],
];

export function jobConditions(query: JobQuery): { conditions: string[]; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  for (const [key, condition] of COLUMN_FILTERS) {
    if (query[key] === undefined) continue;
    conditions.push(condition);
    params.push(query[key]);
  }
  if (query.outcome !== undefined) conditions.push('ended_at IS NOT NULL', OUTCOME_SQL[query.outcome]);
  return { conditions, params };
}
