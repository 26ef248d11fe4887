/**
 * One job until it ends: its start (or resumption after a restart), pause, cancel and deadline,
 * the abort rule, and each result's changes; the sends themselves are job-sends.ts, retry is
 * job-retry.ts. Every change is written to the history before it is announced, and a result is
 * marked sent before its script is published (controller/history-batch.ts; docs/controller.md,
 * "Jobs").
 */
import { retryPlan } from './job-attempts.ts';
import { JobControl } from './job-control.ts';
import { atDeadline, DeadlineTimer } from './job-deadline.ts';
import type { StoredJob } from './job-history.ts';
import { JobLedger } from './job-ledger.ts';
import type { JobRunDeps } from './job-link.ts';
import type { Outcome } from './job-results.ts';
import { type ResumeStep, resumeOnReturn, resumeSent, sentTimes } from './job-resume.ts';
import { JobRetry } from './job-retry.ts';
import { JobSends } from './job-sends.ts';
import {
  type Job,
  type JobResult,
  type JobStatus,
  type JobSummary,
  jobEnded,
  publicResult,
  type RetryOn,
  requestIdFor,
  type StoredResult,
  withOutcome,
} from './job-types.ts';
import { RolloutGate } from './rollout.ts';
import type { DeviceEntry } from './types.ts';

export class JobRun {
  readonly jobId: string;
  private readonly job: StoredJob;
  private readonly deps: JobRunDeps;
  private readonly results: JobLedger;
  private readonly gate: RolloutGate;
  private readonly retry: JobRetry | undefined;
  private readonly control: JobControl;
  private readonly deadline: DeadlineTimer;
  private readonly sends: JobSends;
  private deadlinePassed = false;
  private stopped = false;

  constructor(job: StoredJob, deps: JobRunDeps) {
    this.job = job;
    this.jobId = job.jobId;
    this.deps = deps;
    this.results = new JobLedger(job);
    this.gate = new RolloutGate(job.rollout, deps.clock);
    const plan = retryPlan(job.retry);
    this.retry =
      plan &&
      new JobRetry(plan, deps.clock, () => {
        this.sends.pump();
        this.checkEnded();
        this.armRetry();
      });
    this.deadline = new DeadlineTimer(job.deadlineAt, () => this.onDeadline());
    this.control = new JobControl(job, this.results, {
      clock: deps.clock,
      save: () => this.saveState(),
      onAudit: deps.onAudit,
      pump: () => this.sends.pump(),
    });
    this.sends = new JobSends({
      job,
      results: this.results,
      gate: this.gate,
      control: this.control,
      retry: this.retry,
      deadline: this.deadline,
      deps,
      stopped: () => this.stopped,
      deadlinePassed: () => this.deadlinePassed,
      update: (deviceId, fields, write) => this.update(deviceId, fields, write),
      settle: (deviceId, outcome, write) => this.settle(deviceId, outcome, write),
      end: (deviceId, outcome) => this.end(deviceId, outcome),
      attemptNotRun: (deviceId, reason, detail, write) => this.attemptNotRun(deviceId, reason, detail, write),
      checkAbort: () => this.checkAbort(),
      checkEnded: () => this.checkEnded(),
    });
  }

  get status(): JobStatus {
    return this.job.status;
  }

  get continuous(): boolean {
    return this.job.target.continuous === true;
  }

  summary(): JobSummary {
    const { results: _results, openWave: _openWave, ...rest } = this.job;
    const wave = this.control.progress();
    return withOutcome({ ...rest, ...(wave && { wave }), counts: this.results.countsNow() });
  }

  /** The job with its results as they are now: what the history holds once the batch is committed. */
  snapshot(): Job {
    return { ...this.summary(), results: [...this.results.values()].map(publicResult) };
  }

  /**
   * Starts a new job: the registers it can be sent to at once are marked sent in the job's own
   * insert (`insert`, one transaction), not by an update each after it, then sent.
   */
  startNew(insert: (job: StoredJob) => void): void {
    this.control.refresh(false);
    const sending = this.sends.claim(false);
    insert({ ...this.job, results: [...this.results.values()] });
    // Announced even when nothing is sent yet (SCHEDULED, waiting for a window or a register).
    this.changed();
    this.deadline.arm();
    this.sends.followAll(sending);
    this.checkEnded();
  }

  /** Starts (or, after a restart, resumes: controller/job-resume.ts) the job. */
  start(): void {
    this.gate.restore(sentTimes(this.job.results));
    this.control.refresh(true);
    // A snapshot: settling one result may send the script to the next register (made RUNNING here).
    const sentBefore = [...this.results.values()].filter((result) => result.status === 'RUNNING');
    for (const result of sentBefore) {
      this.takeStep(result.deviceId, resumeSent(result, this.deps.link, this.requestId(result.deviceId)));
    }
    this.deadline.arm();
    this.armRetry();
    this.sends.pump();
    this.checkEnded();
  }

  private takeStep(deviceId: string, step: ResumeStep): void {
    if (step === 'follow') this.sends.follow(deviceId);
    else if (step !== 'wait') this.end(deviceId, step.settle);
  }

  /** The controller stops: timers go; results in flight stay RUNNING in the history (resumable). */
  stop(): void {
    this.stopped = true;
    this.deadline.stop();
    this.sends.stop();
    this.retry?.stop();
    this.control.stop();
  }

  /** A register's directory entry changed: one that came online may now be sent the script. */
  onDevice(entry: DeviceEntry): void {
    if (this.stopped) return;
    const result = this.results.get(entry.deviceId);
    if (!result) {
      if (this.control.joins(entry)) this.addRegister(entry.deviceId);
      return;
    }
    if (result.status === 'RUNNING' && !this.sends.following(entry.deviceId)) {
      // Sent before a restart, not followed since.
      this.takeStep(entry.deviceId, resumeOnReturn(result, entry));
      return;
    }
    if (result.status === 'PENDING' && entry.online) this.sends.pump();
  }

  /** Pauses for a person; false when the job has ended. */
  pause(reason: string): boolean {
    if (jobEnded(this.job.status)) return false;
    this.control.pause(reason);
    return true;
  }

  /** Back to where the job was; false when it has ended. */
  resume(): boolean {
    if (jobEnded(this.job.status)) return false;
    this.control.resume();
    return true;
  }

  /** Stops sending; what is queued on registers is cancelled; running scripts finish. */
  halt(status: 'ABORTED' | 'CANCELLED'): boolean {
    if (jobEnded(this.job.status)) return false;
    this.job.status = status;
    this.job.pausedReason = undefined;
    this.control.stop();
    this.saveState();
    const reason = status === 'ABORTED' ? 'not sent: the job was aborted' : 'not sent: the job was cancelled';
    for (const result of this.results.values()) {
      if (result.status === 'PENDING') {
        this.settle(result.deviceId, { status: 'CANCELLED', error: reason, nextAttemptAt: undefined });
      } else if (result.status === 'RUNNING') {
        // Contract: a cancel by requestId; a task already running is never cut and is recorded.
        this.deps.link.cancel(result.deviceId, this.requestId(result.deviceId));
      }
    }
    this.changed();
    this.checkEnded();
    return true;
  }

  private requestId(deviceId: string): string {
    return requestIdFor(this.jobId, deviceId);
  }

  private addRegister(deviceId: string): void {
    const result: StoredResult = { deviceId, status: 'PENDING', attempts: 0 };
    this.results.add(result);
    this.deps.history.addResult(this.jobId, result);
    this.changed(publicResult(result));
    this.sends.pump();
  }

  /** An attempt that provably did not run: tried again after the backoff, or its final result. */
  private attemptNotRun(deviceId: string, reason: RetryOn, detail: string, write: boolean): void {
    const result = this.results.get(deviceId)!;
    const next = this.retry!.afterNotRun(result, reason, detail, jobEnded(this.job.status));
    if ('final' in next) {
      this.settle(deviceId, next.final, write);
      return;
    }
    this.update(deviceId, next.again, write);
    this.armRetry();
  }

  private armRetry(): void {
    if (!this.stopped) this.retry?.arm(this.results);
  }

  private onDeadline(): void {
    if (this.stopped) return;
    this.deadlinePassed = true;
    for (const result of this.results.values()) {
      const online = this.deps.link.device(result.deviceId)?.online === true;
      const outcome = atDeadline(result, online, this.sends.following(result.deviceId));
      if (outcome) this.end(result.deviceId, outcome);
    }
    this.checkEnded();
  }

  private end(deviceId: string, outcome: Outcome): void {
    this.settle(deviceId, { ...outcome, nextAttemptAt: undefined });
    this.checkAbort();
    this.control.afterEnd();
    this.sends.pump();
    this.checkEnded();
  }

  /** A result ends (without the follow-ups of end(): halt() makes them once for all). */
  private settle(deviceId: string, outcome: Outcome, write = true): void {
    this.update(deviceId, { ...outcome, endedAt: new Date().toISOString() }, write);
  }

  private update(deviceId: string, fields: Partial<StoredResult>, write = true): void {
    const next = this.results.update(deviceId, fields);
    if (next.nextAttemptAt === undefined) delete next.nextAttemptAt;
    if (write) this.deps.history.saveResult(this.jobId, next);
    this.changed(publicResult(next));
  }

  private checkAbort(): void {
    const rule = this.job.abort;
    if (!rule || jobEnded(this.job.status)) return;
    const { finished, failed, offline, noAnswer, cancelled } = this.results.countsNow();
    const ended = finished + failed + offline + noAnswer + cancelled;
    if (failed === 0 || ended < (rule.minEnded ?? 1) || failed / ended < rule.failureRatio) return;
    this.deps.logger.warn({ jobId: this.jobId, failed, ended }, 'job aborted by its failure ratio');
    this.deps.onAudit('job_aborted', `job ${this.jobId}: ${failed} of ${ended} ended results failed`);
    this.halt('ABORTED');
  }

  private checkEnded(): void {
    if (this.job.endedAt !== undefined) return;
    // The counts follow every update(): no result is PENDING or RUNNING any more.
    if (!this.results.allEnded) return;
    // A continuous job waits for registers joining until its end (the deadline is its endAt).
    if (this.continuous && !this.deadlinePassed && !jobEnded(this.job.status)) return;
    if (!jobEnded(this.job.status)) {
      this.job.status = 'COMPLETED';
      this.job.pausedReason = undefined;
      this.deps.onAudit('job_completed', `job ${this.jobId}: ${JSON.stringify(this.results.countsNow())}`);
    }
    this.job.endedAt = new Date().toISOString();
    this.saveState();
    this.stop();
    this.changed();
    this.deps.onEnded(this.jobId);
  }

  private saveState(): void {
    const { status, endedAt, pausedReason, openWave = 0 } = this.job;
    this.deps.history.saveState(this.jobId, { status, endedAt, pausedReason, openWave });
    this.changed();
  }

  /** Announced once the change is committed (HistoryBatch), with the job as it is now. */
  private changed(result?: JobResult): void {
    const summary = this.summary();
    this.deps.history.afterCommit(() => this.deps.onChange(summary, result));
  }
}
