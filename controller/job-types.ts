/**
 * Jobs of the store controller service (docs/controller.md, "The controller service"): a script
 * fanned out to registers with rollout control, an abort rule and a deadline, one result per
 * register. These are the shapes the engine, the SQLite history and the HTTP API share.
 */

export type JobStatus =
  | 'WAITING_FOR_APPROVAL'
  | 'IN_PROGRESS'
  | 'COMPLETED'
  | 'ABORTED'
  | 'CANCELLED'
  | 'DENIED';
export type ResultStatus =
  | 'PENDING'
  | 'RUNNING'
  | 'FINISHED'
  | 'FAILURE'
  | 'OFFLINE'
  | 'NO_ANSWER'
  | 'CANCELLED';

export const JOB_STATUSES: readonly JobStatus[] = [
  'WAITING_FOR_APPROVAL',
  'IN_PROGRESS',
  'COMPLETED',
  'ABORTED',
  'CANCELLED',
  'DENIED',
];

/** The library script a job was rendered from (docs/controller.md, "Script library"). */
export interface ScriptRef {
  scriptId: string;
  version: number;
  params: Record<string, string | number>;
}

/** An approver's decision on a job that waited for approval. */
export interface Approval {
  decision: 'approved' | 'denied';
  by: string;
  at: string;
  comment?: string;
}
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

export type JobTarget = { group: string } | { devices: string[] };

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
  /** Set when `script` was rendered from the library. */
  scriptRef?: ScriptRef;
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
  scriptRef?: ScriptRef;
  approval?: Approval;
  counts: JobCounts;
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
