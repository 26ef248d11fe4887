/**
 * The jobs of the store controller service: creates them (target resolved at creation, the
 * Idempotency-Key honoured), runs each through a JobRun, cancels them, and picks up the jobs a
 * previous process left open. Speaks its domain: the HTTP layer turns the outcomes into answers.
 * docs/controller.md, "The controller service".
 */
import { createHash, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { isMultiStore } from '../bridge/contract/store-namespace.ts';
import type { Logger } from '../src/logger.ts';
import type { AuditLog } from './audit-log.ts';
import { HistoryBatch } from './history-batch.ts';
import type { JobHistory, StoredJob } from './job-history.ts';
import type { JobLink } from './job-link.ts';
import type { JobQuery } from './job-query.ts';
import { JobRun } from './job-run.ts';
import {
  DEFAULT_DEADLINE_MS,
  type Job,
  type JobOrigin,
  type JobResult,
  type JobSpec,
  type JobSummary,
  jobEnded,
  type ResultStatus,
  type StoredResult,
} from './job-types.ts';
import { firstStart } from './job-window.ts';
import { insideScope } from './permissions.ts';
import { type PacingClock, realClock } from './rollout.ts';
import { describeTarget, onlyDevices, resolveTarget, unknownListed } from './target-match.ts';
import type { DeviceEntry } from './types.ts';
import type { Scope } from './users.ts';

/** What the engine needs of the store controller: a JobLink plus the directory and its events. */
export interface EngineLink extends JobLink {
  /** The namespace: `stores/+` makes the registers' ids `store/id` keys. */
  readonly ns: string;
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
  /** An operator's scope: every register the job reaches must be inside it. */
  scope?: Scope | undefined;
}

export type CreateOutcome =
  | { kind: 'created'; job: Job }
  | { kind: 'replayed'; job: Job }
  | { kind: 'conflict'; jobId: string }
  | { kind: 'noTarget'; message: string }
  | { kind: 'outOfScope'; deviceIds: string[] };

export type DecideOutcome =
  | { kind: 'decided'; job: Job }
  | { kind: 'notWaiting'; job: Job }
  | { kind: 'selfApproval' }
  | { kind: 'outOfScope'; deviceIds: string[] }
  | { kind: 'unknown' };

/** cancel, pause, resume: done, the job had ended, it reaches outside the caller's scope, or no such job. */
export type ControlOutcome =
  | { kind: 'done'; job: Job }
  | { kind: 'ended'; job: Job }
  | { kind: 'outOfScope'; deviceIds: string[] }
  | { kind: 'unknown' };

export type RerunOutcome = CreateOutcome | { kind: 'unknown' } | { kind: 'open'; job: Job };

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
    retry: spec.retry ?? null,
    startAt: spec.startAt ?? null,
    window: spec.window ?? null,
    endAt: spec.endAt ?? null,
    scriptRef: spec.scriptRef ?? null,
  };
  return createHash('sha256').update(JSON.stringify(normal)).digest('hex');
}

function summaryOf(job: Job): JobSummary {
  const { results: _results, ...summary } = job;
  return summary;
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

  /**
   * Creates a job; with `waitForApproval` it is stored WAITING_FOR_APPROVAL and nothing is sent
   * until an approver approves it (docs/controller.md, "Approval").
   */
  create(
    spec: JobSpec,
    caller: Caller,
    idempotencyKey?: string,
    options: JobOrigin & { waitForApproval?: boolean } = {},
  ): CreateOutcome {
    const origin = options;
    const { history, audit } = this.options;
    this.batch.flush();
    const hash = specHash(spec);
    if (idempotencyKey !== undefined) {
      const seen = history.byIdempotencyKey(idempotencyKey);
      if (seen && seen.hash === hash) return { kind: 'replayed', job: history.get(seen.jobId)! };
      if (seen) return { kind: 'conflict', jobId: seen.jobId };
    }
    if (!this.multiStore) {
      const keyed = (spec.target.devices ?? []).find((id) => id.includes('/'));
      if (spec.target.stores !== undefined || keyed !== undefined)
        return {
          kind: 'noTarget',
          message: `${keyed !== undefined ? `"${keyed}": store/id` : '"stores"'} needs a controller of several stores (--ns 'stores/+')`,
        };
    }
    const known = this.options.link.devices();
    const deviceIds = resolveTarget(spec.target, known, this.multiStore);
    const unknown = spec.target.allowUnknown === true ? [] : unknownListed(spec.target, known);
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
    if (spec.target.allowUnknown === true && this.multiStore) {
      const plain = (spec.target.devices ?? []).filter((id) => !id.includes('/'));
      if (plain.length > 0)
        return {
          kind: 'noTarget',
          message: `with several stores, "allowUnknown" needs store/id: ${plain.slice(0, 10).join(', ')}`,
        };
    }
    if (deviceIds.length === 0 && spec.target.continuous !== true) {
      return { kind: 'noTarget', message: `no register is known in ${describeTarget(spec.target)}` };
    }
    const outside = this.outsideScope(caller.scope, deviceIds);
    if (outside.length > 0) return { kind: 'outOfScope', deviceIds: outside };
    // A continuous job takes registers that join later: a scoped operator's must be bound to the
    // scope by the target itself (its group, its stores), or a register outside could join it.
    const scope = caller.scope;
    const { stores, group } = spec.target;
    const continuousOutside =
      spec.target.continuous === true &&
      (scope?.kind === 'store'
        ? stores === undefined
        : scope?.kind === 'group' && (group === undefined || !scope.values.includes(group)));
    if (
      continuousOutside ||
      (scope?.kind === 'store' && stores?.some((store) => !scope.values.includes(store)))
    )
      return { kind: 'outOfScope', deviceIds: [] };
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
      ...(spec.retry !== undefined && { retry: spec.retry }),
      ...(spec.startAt !== undefined && { startAt: new Date(spec.startAt).toISOString() }),
      ...(spec.window !== undefined && { window: spec.window }),
      ...(spec.endAt !== undefined && { endAt: new Date(spec.endAt).toISOString() }),
      ...(origin.scheduleId !== undefined && { scheduleId: origin.scheduleId }),
      ...(origin.rerunOf !== undefined && { rerunOf: origin.rerunOf }),
      ...(spec.scriptRef !== undefined && { scriptRef: spec.scriptRef }),
      deadlineAt: new Date(this.deadlineOf(spec, now)).toISOString(),
      results: deviceIds.map((deviceId): StoredResult => ({ deviceId, status: 'PENDING', attempts: 0 })),
      openWave: 0,
    };
    const name = job.name !== undefined ? ` "${job.name}"` : '';
    const target = onlyDevices(job.target) ? `devices ${deviceIds.join(',')}` : describeTarget(job.target);
    const library = job.scriptRef ? ` from script ${job.scriptRef.scriptId} v${job.scriptRef.version}` : '';
    if (options.waitForApproval) {
      job.status = 'WAITING_FOR_APPROVAL';
      history.transaction(() => {
        history.insert(job, idempotencyKey !== undefined ? { key: idempotencyKey, hash } : undefined);
        audit.record({
          ...caller,
          action: 'job_created',
          detail: `job ${job.jobId}${name}${library} to ${target} (${deviceIds.length} registers), waiting for approval`,
        });
      });
      const created = history.get(job.jobId)!;
      this.emit('job', summaryOf(created), undefined);
      return { kind: 'created', job: created };
    }
    const run = this.track(job);
    try {
      // The job and the results it sends at once, in one insert; then the scripts are published.
      run.startNew((stored) => {
        history.insert(stored, idempotencyKey !== undefined ? { key: idempotencyKey, hash } : undefined);
        audit.record({
          ...caller,
          action: 'job_created',
          detail: `job ${job.jobId}${name}${library} to ${target} (${deviceIds.length} registers)`,
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

  cancel(jobId: string, caller: Caller): ControlOutcome {
    return this.control(
      jobId,
      caller,
      (run) => {
        this.options.audit.record({ ...caller, action: 'job_cancelled', detail: `job ${jobId}` });
        run.halt('CANCELLED');
      },
      (job) => this.cancelWaiting(job, caller),
    );
  }

  pause(jobId: string, caller: Caller): ControlOutcome {
    return this.control(jobId, caller, (run) => {
      if (run.status === 'PAUSED') return;
      this.options.audit.record({ ...caller, action: 'job_paused', detail: `job ${jobId}` });
      run.pause(`paused by ${caller.user}`);
    });
  }

  resume(jobId: string, caller: Caller): ControlOutcome {
    return this.control(jobId, caller, (run) => {
      if (run.status !== 'PAUSED') return;
      this.options.audit.record({ ...caller, action: 'job_resumed', detail: `job ${jobId}` });
      run.resume();
    });
  }

  /**
   * A new job (new requestIds) with the same script and settings over the registers whose
   * results had one of `statuses`; `rerunOf` names the first job of the chain.
   */
  rerun(jobId: string, statuses: readonly ResultStatus[], caller: Caller): RerunOutcome {
    this.batch.flush();
    const job = this.options.history.get(jobId);
    if (!job) return { kind: 'unknown' };
    if (!jobEnded(job.status)) return { kind: 'open', job };
    const devices = job.results.filter((r) => statuses.includes(r.status)).map((r) => r.deviceId);
    if (devices.length === 0) {
      return { kind: 'noTarget', message: `no result of job ${jobId} has status ${statuses.join(' or ')}` };
    }
    const spec: JobSpec = {
      script: job.script,
      target: { devices },
      ...(job.name !== undefined && { name: job.name }),
      ...(job.rollout !== undefined && { rollout: job.rollout }),
      ...(job.abort !== undefined && { abort: job.abort }),
      ...(job.retry !== undefined && { retry: job.retry }),
      ...(job.window !== undefined && { window: job.window }),
      deadlineMs: Math.max(1000, Date.parse(job.deadlineAt) - Date.parse(job.startAt ?? job.createdAt)),
    };
    return this.create(spec, caller, undefined, { rerunOf: job.rerunOf ?? job.jobId });
  }

  private control(
    jobId: string,
    caller: Caller,
    act: (run: JobRun) => void,
    onWaiting: (job: Job) => ControlOutcome = (job) => ({ kind: 'done', job }),
  ): ControlOutcome {
    const run = this.runs.get(jobId);
    this.batch.flush();
    if (caller.scope !== undefined) {
      const job = this.options.history.get(jobId);
      const outside = job
        ? this.outsideScope(
            caller.scope,
            job.results.map((r) => r.deviceId),
          )
        : [];
      if (outside.length > 0) return { kind: 'outOfScope', deviceIds: outside };
    }
    if (!run || jobEnded(run.status)) {
      const job = this.options.history.get(jobId);
      if (job?.status === 'WAITING_FOR_APPROVAL') return onWaiting(job);
      return job ? { kind: 'ended', job } : { kind: 'unknown' };
    }
    act(run);
    this.batch.flush();
    return { kind: 'done', job: this.options.history.get(jobId)! };
  }

  /**
   * A job's deadline counts from when it may first send: its startAt, the opening of its first
   * window, or now; a continuous job's is its endAt.
   */
  private deadlineOf(spec: JobSpec, now: number): number {
    if (spec.target.continuous === true && spec.endAt !== undefined) return Date.parse(spec.endAt);
    const deadlineMs = spec.deadlineMs ?? DEFAULT_DEADLINE_MS;
    if (spec.startAt === undefined && spec.window === undefined) return now + deadlineMs;
    const clockNow = (this.options.clock ?? realClock).now();
    const startAt = spec.startAt !== undefined ? Date.parse(spec.startAt) : undefined;
    return firstStart(startAt, spec.window, clockNow) + deadlineMs;
  }

  /**
   * An approver's decision on a waiting job (never its creator's): approved, it starts with a
   * new deadline (the job's own duration from now); denied, it ends DENIED, nothing sent.
   */
  decide(jobId: string, decision: 'approve' | 'deny', caller: Caller, comment?: string): DecideOutcome {
    this.batch.flush();
    const { history, audit } = this.options;
    const job = history.get(jobId);
    if (!job) return { kind: 'unknown' };
    if (job.status !== 'WAITING_FOR_APPROVAL') return { kind: 'notWaiting', job };
    if (job.createdBy === caller.user) return { kind: 'selfApproval' };
    const outside = this.outsideScope(
      caller.scope,
      job.results.map((r) => r.deviceId),
    );
    if (outside.length > 0) return { kind: 'outOfScope', deviceIds: outside };
    const now = Date.now();
    const duration = Date.parse(job.deadlineAt) - Date.parse(job.createdAt);
    const approval = {
      decision: decision === 'approve' ? ('approved' as const) : ('denied' as const),
      by: caller.user,
      at: new Date(now).toISOString(),
      ...(comment !== undefined && { comment }),
    };
    const deadlineAt = new Date(now + duration).toISOString();
    let decided = false;
    history.transaction(() => {
      decided = history.decide(
        jobId,
        decision === 'approve' ? 'IN_PROGRESS' : 'DENIED',
        approval,
        deadlineAt,
      );
      if (!decided) return;
      if (decision === 'deny') {
        for (const result of job.results) {
          history.saveResult(jobId, {
            ...result,
            status: 'CANCELLED',
            error: 'not sent: the job was denied',
            endedAt: approval.at,
          });
        }
      }
      audit.record({
        ...caller,
        action: decision === 'approve' ? 'job_approved' : 'job_denied',
        detail: `job ${jobId}${comment !== undefined ? `: ${comment}` : ''}`,
      });
    });
    if (!decided) return { kind: 'notWaiting', job: history.get(jobId)! };
    const updated = history.get(jobId)!;
    if (decision === 'approve') {
      const { counts: _counts, ...stored } = updated;
      this.track({ ...stored, results: updated.results }).start();
      this.batch.flush();
    } else this.emit('job', summaryOf(updated), undefined);
    return { kind: 'decided', job: this.options.history.get(jobId)! };
  }

  /** A job still waiting for approval is withdrawn: CANCELLED, nothing was sent. */
  private cancelWaiting(job: Job, caller: Caller): ControlOutcome {
    const { history, audit } = this.options;
    const at = new Date().toISOString();
    history.transaction(() => {
      history.saveStatus(job.jobId, 'CANCELLED', at);
      for (const result of job.results) {
        history.saveResult(job.jobId, {
          ...result,
          status: 'CANCELLED',
          error: 'not sent: the job was cancelled',
          endedAt: at,
        });
      }
      audit.record({
        ...caller,
        action: 'job_cancelled',
        detail: `job ${job.jobId} (was waiting for approval)`,
      });
    });
    const cancelled = history.get(job.jobId)!;
    this.emit('job', summaryOf(cancelled), undefined);
    return { kind: 'done', job: cancelled };
  }

  get(jobId: string): Job | undefined {
    this.batch.flushForRead();
    return this.options.history.get(jobId);
  }

  /** Reads the history with this turn's changes written first (searches, exports). */
  readHistory<T>(read: () => T): T {
    this.batch.flushForRead();
    return read();
  }

  /** undefined: `before` is not a known job. */
  list(limit: number, before?: string, query?: JobQuery): JobSummary[] | undefined {
    this.batch.flushForRead();
    return this.options.history.list(limit, before, query);
  }

  /** The registers of `deviceIds` outside `scope` (unknown ones included). */
  private outsideScope(scope: Scope | undefined, deviceIds: readonly string[]): string[] {
    if (scope === undefined) return [];
    const known = new Map(this.options.link.devices().map((entry) => [entry.deviceId, entry]));
    return deviceIds.filter((id) => !insideScope(scope, known.get(id), id));
  }

  private get multiStore(): boolean {
    return isMultiStore(this.options.link.ns);
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
