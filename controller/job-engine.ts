/**
 * The jobs of the store controller service: creates them (target resolved at creation, the
 * Idempotency-Key honoured), runs each through a JobRun, cancels them, and picks up the jobs a
 * previous process left open. Speaks its domain: the HTTP layer turns the outcomes into answers.
 * docs/controller.md, "The controller service".
 */
import { createHash, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { ALL_GROUP } from '../bridge/contract/topics.ts';
import type { Logger } from '../src/logger.ts';
import type { AuditLog } from './audit-log.ts';
import { HistoryBatch } from './history-batch.ts';
import type { JobHistory, StoredJob } from './job-history.ts';
import { type JobLink, JobRun } from './job-run.ts';
import {
  DEFAULT_DEADLINE_MS,
  type Job,
  type JobResult,
  type JobSpec,
  type JobSummary,
  type StoredResult,
} from './job-types.ts';
import { type PacingClock, realClock } from './rollout.ts';
import type { DeviceEntry } from './types.ts';

/** What the engine needs of the store controller: a JobLink plus the directory and its events. */
export interface EngineLink extends JobLink {
  devices(): DeviceEntry[];
  on(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
  off(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
}

export interface JobEngineOptions {
  link: EngineLink;
  history: JobHistory;
  audit: AuditLog;
  logger: Logger;
  /** The clock of rate pacing (tests); default real time. */
  clock?: PacingClock;
  /** Results changed within this window are written in one transaction (controller/history-batch.ts). */
  commitIntervalMs?: number;
}

export interface Caller {
  user: string;
  address: string;
}

export type CreateOutcome =
  | { kind: 'created'; job: Job }
  | { kind: 'replayed'; job: Job }
  | { kind: 'conflict'; jobId: string }
  | { kind: 'noTarget'; message: string };

export type CancelOutcome =
  | { kind: 'cancelled'; job: Job }
  | { kind: 'ended'; job: Job }
  | { kind: 'unknown' };

export interface EngineEvents {
  /** A job changed; `result` is the result that changed, when one did. */
  job: [job: JobSummary, result: JobResult | undefined];
}

/** The hash an Idempotency-Key is bound to: what was asked for, normalised. */
export function specHash(spec: JobSpec): string {
  const normal = {
    script: spec.script,
    target: spec.target,
    name: spec.name ?? null,
    rollout: spec.rollout ?? null,
    abort: spec.abort ?? null,
    deadlineMs: spec.deadlineMs ?? null,
  };
  return createHash('sha256').update(JSON.stringify(normal)).digest('hex');
}

export class JobEngine extends EventEmitter<EngineEvents> {
  private readonly options: JobEngineOptions;
  private readonly runs = new Map<string, JobRun>();
  /** The runs' changes, written a turn at a time; every read below flushes it first. */
  private readonly batch: HistoryBatch;
  private readonly onDevice = (entry: DeviceEntry): void => {
    for (const run of [...this.runs.values()]) run.onDevice(entry);
  };
  private started = false;

  constructor(options: JobEngineOptions) {
    super();
    this.options = options;
    this.batch = new HistoryBatch(options.history, options.logger, options.commitIntervalMs);
  }

  /** Jobs running now (in memory); ended ones live in the history only. */
  get activeCount(): number {
    return this.runs.size;
  }

  /** Call once the store controller has started (its directory holds the retained states and statuses). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.options.link.on('device', this.onDevice);
    const open = this.options.history.unfinished();
    if (open.length > 0) this.options.logger.info({ jobs: open.length }, 'resuming jobs left open');
    for (const job of open) this.track(job).start();
  }

  /** Before the store controller stops: results in flight stay open in the history, to be resumed. */
  stop(): void {
    if (!this.started) return;
    this.started = false;
    this.options.link.off('device', this.onDevice);
    for (const run of this.runs.values()) run.stop();
    this.runs.clear();
    // What the runs changed last is committed (and announced) before the database closes; no
    // retry outlives the engine (results left open resume at the next start).
    try {
      this.batch.flush();
    } finally {
      this.batch.stop();
    }
  }

  create(spec: JobSpec, caller: Caller, idempotencyKey?: string): CreateOutcome {
    const { history, audit } = this.options;
    this.batch.flush();
    const hash = specHash(spec);
    if (idempotencyKey !== undefined) {
      const seen = history.byIdempotencyKey(idempotencyKey);
      if (seen && seen.hash === hash) return { kind: 'replayed', job: history.get(seen.jobId)! };
      if (seen) return { kind: 'conflict', jobId: seen.jobId };
    }
    const deviceIds = this.resolveTarget(spec);
    const unknown = this.unknownListed(spec);
    if (unknown.length > 0) {
      const listed =
        unknown.length > 10
          ? `${unknown.slice(0, 10).join(', ')} and ${unknown.length - 10} more`
          : unknown.join(', ');
      return {
        kind: 'noTarget',
        message:
          `${unknown.length === 1 ? 'register' : 'registers'} ${listed} never seen by this controller: ` +
          'check the ids, or add "allowUnknown": true to send when they first connect',
      };
    }
    if (deviceIds.length === 0) {
      const target = 'group' in spec.target ? `group ${spec.target.group}` : 'the device list';
      return { kind: 'noTarget', message: `no register is known in ${target}` };
    }
    const now = Date.now();
    const job: StoredJob = {
      jobId: randomUUID(),
      ...(spec.name !== undefined && { name: spec.name }),
      createdBy: caller.user,
      createdAt: new Date(now).toISOString(),
      status: 'IN_PROGRESS',
      script: spec.script,
      target: spec.target,
      ...(spec.rollout !== undefined && { rollout: spec.rollout }),
      ...(spec.abort !== undefined && { abort: spec.abort }),
      deadlineAt: new Date(now + (spec.deadlineMs ?? DEFAULT_DEADLINE_MS)).toISOString(),
      results: deviceIds.map((deviceId): StoredResult => ({ deviceId, status: 'PENDING' })),
    };
    const name = job.name !== undefined ? ` "${job.name}"` : '';
    const target = 'group' in job.target ? `group ${job.target.group}` : `devices ${deviceIds.join(',')}`;
    const run = this.track(job);
    try {
      // The job and the results it sends at once, in one insert; then the scripts are published.
      run.startNew((stored) => {
        history.insert(stored, idempotencyKey !== undefined ? { key: idempotencyKey, hash } : undefined);
        audit.record({
          ...caller,
          action: 'job_created',
          detail: `job ${job.jobId}${name} to ${target} (${deviceIds.length} registers)`,
        });
      });
    } catch (error) {
      // Not stored (the database refused): nothing was sent, the job does not exist.
      run.stop();
      this.runs.delete(job.jobId);
      throw error;
    }
    // Committed for the answer; the job's events go out at the end of the turn, after its scripts.
    this.batch.commitNow();
    // From memory, not read back: the scripts leave only once this turn's synchronous work is
    // done, and a read of 500 results cost ~2 ms before them (docs/benchmarks.md, scenario 7).
    return { kind: 'created', job: run.snapshot() };
  }

  cancel(jobId: string, caller: Caller): CancelOutcome {
    const run = this.runs.get(jobId);
    this.batch.flush();
    if (run?.status !== 'IN_PROGRESS') {
      const job = this.options.history.get(jobId);
      return job ? { kind: 'ended', job } : { kind: 'unknown' };
    }
    this.options.audit.record({ ...caller, action: 'job_cancelled', detail: `job ${jobId}` });
    run.halt('CANCELLED');
    this.batch.flush();
    return { kind: 'cancelled', job: this.options.history.get(jobId)! };
  }

  get(jobId: string): Job | undefined {
    this.batch.flushForRead();
    return this.options.history.get(jobId);
  }

  /** undefined: `before` is not a known job. */
  list(limit: number, before?: string): JobSummary[] | undefined {
    this.batch.flushForRead();
    return this.options.history.list(limit, before);
  }

  /**
   * Listed ids the controller has never seen (a typo waits for the deadline otherwise, while an
   * unknown group is refused at once); none when the list says `allowUnknown`.
   */
  private unknownListed(spec: JobSpec): string[] {
    if (!('devices' in spec.target) || spec.target.allowUnknown) return [];
    const known = new Set(this.options.link.devices().map((entry) => entry.deviceId));
    return [...new Set(spec.target.devices)].filter((id) => !known.has(id));
  }

  /** The devices known now in the target's group (online or not), or the listed ids. */
  private resolveTarget(spec: JobSpec): string[] {
    if ('devices' in spec.target) return [...new Set(spec.target.devices)];
    const group = spec.target.group;
    return this.options.link
      .devices()
      .filter((entry) => group === ALL_GROUP || entry.groups.includes(group))
      .map((entry) => entry.deviceId);
  }

  /** A run for `job`, known to the engine until it ends; the caller starts it. */
  private track(job: StoredJob): JobRun {
    const { link, audit, logger } = this.options;
    const run = new JobRun(job, {
      link,
      history: this.batch,
      logger,
      clock: this.options.clock ?? realClock,
      onChange: (summary, result) => this.emit('job', summary, result),
      onAudit: (action, detail) => audit.record({ user: 'system', address: '', action, detail }),
      onEnded: (jobId) => this.runs.delete(jobId),
    });
    this.runs.set(job.jobId, run);
    return run;
  }
}
