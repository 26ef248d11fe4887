/**
 * Jobs of the store controller service (docs/controller.md, "The controller service"): a script
 * fanned out to registers with rollout control, an abort rule and a deadline, one result per
 * register. These are the shapes the engine, the SQLite history and the HTTP API share.
 */

/**
 * Every job status, in one list (contract 7.5): the ones a job may still leave first, the ended
 * ones after. A new status is added here and in ENDED_JOB_STATUSES when it ends a job.
 */
export const JOB_STATUSES = [
  'WAITING_FOR_APPROVAL',
  'SCHEDULED',
  'WAITING_FOR_WINDOW',
  'PAUSED',
  'IN_PROGRESS',
  'COMPLETED',
  'ABORTED',
  'CANCELLED',
  'DENIED',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** Statuses after which nothing more happens to a job. */
export const ENDED_JOB_STATUSES: readonly JobStatus[] = ['COMPLETED', 'ABORTED', 'CANCELLED', 'DENIED'];
/**
 * Statuses of a job the engine runs (and resumes after a restart); a job waiting for approval
 * stays in the history until an approver starts it.
 */
export const OPEN_JOB_STATUSES: readonly JobStatus[] = JOB_STATUSES.filter(
  (status) => !ENDED_JOB_STATUSES.includes(status) && status !== 'WAITING_FOR_APPROVAL',
);

export function jobEnded(status: JobStatus): boolean {
  return ENDED_JOB_STATUSES.includes(status);
}
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
export const RESULT_STATUSES = [
  'PENDING',
  'RUNNING',
  'FINISHED',
  'FAILURE',
  'OFFLINE',
  'NO_ANSWER',
  'CANCELLED',
] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];

/** A result that will not change any more. */
export function resultEnded(status: ResultStatus): boolean {
  return status !== 'PENDING' && status !== 'RUNNING';
}

/**
 * Conditions (`group`, `devices`, `stores`, `attributes`) combine: a register is taken when it
 * matches every one given (controller/target-match.ts).
 * `allowUnknown`: registers never seen yet are taken too (sent when they first connect).
 * `continuous`: registers joining the target while the job runs get it too (contract 7.5).
 */
export interface JobTarget {
  group?: string;
  /** Plain ids, or `store/id` with several stores. */
  devices?: string[];
  allowUnknown?: boolean;
  /** With several stores (`--ns 'stores/+'`): registers of these stores. */
  stores?: string[];
  /** Registers whose state has every one of these attributes with this value. */
  attributes?: Record<string, string>;
  continuous?: boolean;
}

/** One wave of a rollout: `size` registers (or "N%" of the target), in target order. */
export interface Wave {
  size: number | string;
  /** 0..1: the next wave starts only once FINISHED / ended of this one reaches it. */
  successRatio?: number;
  /** The job pauses after this wave, for a person to resume it. */
  pauseAfter?: boolean;
}

/** Results retried automatically, only while provably not run (contract 7.5). */
export const RETRY_ON = ['OFFLINE', 'NO_ANSWER', 'REFUSED'] as const;
export type RetryOn = (typeof RETRY_ON)[number];

export interface RetryRule {
  /** Attempts per register, the first included: 1..10. */
  maxAttempts: number;
  /** Wait before the next attempt (default DEFAULT_BACKOFF_MS). */
  backoffMs?: number;
  /** Default: all of RETRY_ON. */
  on?: RetryOn[];
  /** How long one attempt waits for an answer before it is NO_ANSWER (default DEFAULT_ATTEMPT_TIMEOUT_MS). */
  attemptTimeoutMs?: number;
}

export const DEFAULT_BACKOFF_MS = 60_000;
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 60_000;

/** Scripts are sent only while a window is open: one opens at each cron match, for durationMs. */
export interface JobWindow {
  cron: string;
  durationMs: number;
  timezone: string;
}

export interface Rollout {
  /** At most this many registers running the job's script at once (default: no limit). */
  batchSize?: number;
  /** At most this many sends per rolling minute (default: no limit). */
  maxPerMinute?: number;
  waves?: Wave[];
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
  /** From the job's start (startAt, the first window, or creation); default DEFAULT_DEADLINE_MS. */
  deadlineMs?: number;
  retry?: RetryRule;
  /** ISO time: the job is SCHEDULED until then. */
  startAt?: string;
  window?: JobWindow;
  /** ISO time a continuous job ends (required with target.continuous). */
  endAt?: string;
  /** Set when `script` was rendered from the library. */
  scriptRef?: ScriptRef;
}

/** Set by the engine, not asked for: where a job comes from. */
export interface JobOrigin {
  scheduleId?: string;
  rerunOf?: string;
}

export const DEFAULT_DEADLINE_MS = 10 * 60_000;

export interface JobResult {
  /**
   * The register; inside the engine a key `store/id` with several stores, which the API shows
   * as `store` and `deviceId` (controller/service/store-bodies.ts).
   */
  deviceId: string;
  /** In API bodies only, with several stores. */
  store?: string;
  status: ResultStatus;
  taskId?: number;
  report?: string;
  error?: string;
  sentAt?: string;
  endedAt?: string;
  /** Attempts made so far (a send, or a turn at which the register was offline); always in the API. */
  attempts?: number;
  /** While waiting to be tried again: when. */
  nextAttemptAt?: string;
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
export const JOB_OUTCOMES = ['SUCCEEDED', 'PARTIAL', 'FAILED'] as const;
export type JobOutcome = (typeof JOB_OUTCOMES)[number];

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
  retry?: RetryRule;
  startAt?: string;
  window?: JobWindow;
  endAt?: string;
  scheduleId?: string;
  rerunOf?: string;
  /** Why a PAUSED job is paused, for a person. */
  pausedReason?: string;
  /** With waves: the wave being sent (1-based) and how many there are. */
  wave?: { current: number; count: number };
  deadlineAt: string;
  scriptRef?: ScriptRef;
  approval?: Approval;
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
 * The outcome of an ended job (undefined until endedAt): SUCCEEDED when every result FINISHED,
 * FAILED when none did (or there is none), PARTIAL otherwise.
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
 * The requestId of every send of a job to one register (unique to (job, device)), so a resend
 * after a restart runs nothing again.
 */
export function requestIdFor(jobId: string, deviceId: string): string {
  // A key `store/id` (several stores) becomes `store:id`: a requestId is a topic level, no `/`.
  return `${jobId}:${deviceId.replace('/', ':')}`;
}

/** A result without the engine's bookkeeping, for the API. */
export function publicResult(result: StoredResult): JobResult {
  const { sentBoot: _sentBoot, ...rest } = result;
  return { ...rest, attempts: attemptsOf(result) };
}

/** Attempts of a result as stored before attempts were counted: 1 once sent. */
export function attemptsOf(result: StoredResult): number {
  return result.attempts ?? (result.sentAt !== undefined ? 1 : 0);
}
