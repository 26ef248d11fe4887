/**
 * Jobs of the store controller service (docs/controller.md, "The controller service"): a script
 * fanned out to registers with rollout control, an abort rule and a deadline, one result per
 * register. These are the shapes the engine, the SQLite history and the HTTP API share.
 */

export type JobStatus = 'IN_PROGRESS' | 'COMPLETED' | 'ABORTED' | 'CANCELLED';
export type ResultStatus =
  | 'PENDING'
  | 'RUNNING'
  | 'FINISHED'
  | 'FAILURE'
  | 'OFFLINE'
  | 'NO_ANSWER'
  | 'CANCELLED';

export const JOB_STATUSES: readonly JobStatus[] = ['IN_PROGRESS', 'COMPLETED', 'ABORTED', 'CANCELLED'];
export const RESULT_STATUSES: readonly ResultStatus[] = [
  'PENDING',
  'RUNNING',
  'FINISHED',
  'FAILURE',
  'OFFLINE',
  'NO_ANSWER',
  'CANCELLED',
];

/** A result that will not change any more. */
export function resultEnded(status: ResultStatus): boolean {
  return status !== 'PENDING' && status !== 'RUNNING';
}

/** `allowUnknown`: registers never seen yet are taken too (sent when they first connect). */
export type JobTarget = { group: string } | { devices: string[]; allowUnknown?: boolean };

export interface Rollout {
  /** At most this many registers running the job's script at once (default: no limit). */
  batchSize?: number;
  /** At most this many sends per rolling minute (default: no limit). */
  maxPerMinute?: number;
}

export interface AbortRule {
  /** 0..1: the job aborts once failed / ended >= this (and at least one failed). */
  failureRatio: number;
  /** Ended results needed before the ratio is looked at (default 1). */
  minEnded?: number;
}

/** What a caller asks for (POST /api/jobs). */
export interface JobSpec {
  script: string;
  target: JobTarget;
  name?: string;
  rollout?: Rollout;
  abort?: AbortRule;
  /** From creation; default DEFAULT_DEADLINE_MS. */
  deadlineMs?: number;
}

export const DEFAULT_DEADLINE_MS = 10 * 60_000;

export interface JobResult {
  deviceId: string;
  status: ResultStatus;
  taskId?: number;
  report?: string;
  error?: string;
  sentAt?: string;
  endedAt?: string;
}

/** A result as the engine and the history keep it: with the bootId the device had when sent. */
export interface StoredResult extends JobResult {
  sentBoot?: string;
}

export interface JobCounts {
  total: number;
  pending: number;
  running: number;
  finished: number;
  failed: number;
  offline: number;
  noAnswer: number;
  cancelled: number;
}

/** What a person reads first about an ended job: every result FINISHED, some, or none. */
export type JobOutcome = 'SUCCEEDED' | 'PARTIAL' | 'FAILED';

export interface JobSummary {
  jobId: string;
  name?: string;
  createdBy: string;
  createdAt: string;
  endedAt?: string;
  status: JobStatus;
  script: string;
  target: JobTarget;
  rollout?: Rollout;
  abort?: AbortRule;
  deadlineAt: string;
  counts: JobCounts;
  /** Only once the job has ended. */
  outcome?: JobOutcome;
}

export interface Job extends JobSummary {
  results: JobResult[];
}

const COUNT_KEY: Record<ResultStatus, keyof JobCounts> = {
  PENDING: 'pending',
  RUNNING: 'running',
  FINISHED: 'finished',
  FAILURE: 'failed',
  OFFLINE: 'offline',
  NO_ANSWER: 'noAnswer',
  CANCELLED: 'cancelled',
};

/**
 * The outcome of an ended job (endedAt set: no result open any more; undefined before, also while
 * a cancelled job waits for the scripts already running): SUCCEEDED when every result is
 * FINISHED, FAILED when none is, PARTIAL otherwise. A job with no result is FAILED: nothing ran.
 */
export function jobOutcome(job: { endedAt?: string | undefined; counts: JobCounts }): JobOutcome | undefined {
  if (job.endedAt === undefined) return undefined;
  if (job.counts.finished === 0) return 'FAILED';
  return job.counts.finished === job.counts.total ? 'SUCCEEDED' : 'PARTIAL';
}

/** The summary with its outcome set from endedAt and the counts (the one place it is derived). */
export function withOutcome<T extends JobSummary>(job: T): T {
  const outcome = jobOutcome(job);
  const { outcome: _stale, ...rest } = job;
  return (outcome === undefined ? rest : { ...rest, outcome }) as T;
}

export function emptyCounts(): JobCounts {
  return { total: 0, pending: 0, running: 0, finished: 0, failed: 0, offline: 0, noAnswer: 0, cancelled: 0 };
}

export function addToCounts(counts: JobCounts, status: ResultStatus, n = 1): void {
  counts[COUNT_KEY[status]] += n;
  counts.total += n;
}

export function countResults(results: Iterable<{ status: ResultStatus }>): JobCounts {
  const counts = emptyCounts();
  for (const result of results) addToCounts(counts, result.status);
  return counts;
}

/**
 * The requestId of every send of a job to one register (contract: unique to (job, device)), so
 * a resend after a restart is recognised by the device and runs nothing again.
 */
export function requestIdFor(jobId: string, deviceId: string): string {
  return `${jobId}:${deviceId}`;
}

/** A result without the engine's bookkeeping, for the API. */
export function publicResult(result: StoredResult): JobResult {
  const { sentBoot: _sentBoot, ...rest } = result;
  return rest;
}
