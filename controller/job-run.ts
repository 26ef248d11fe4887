/**
 * One job in progress: sends its script register by register through the store controller
 * (one submission per register, requestId unique to (job, register)), within the rollout
 * limits, to registers as they come online, until the deadline; applies the abort rule; cancels
 * what is still queued on an abort or cancel. Every change is written to the history before
 * it is announced, and a result is marked sent before its script is published; the changes of
 * one event-loop turn go in one transaction (controller/history-batch.ts; docs/controller.md,
 * "Jobs").
 */
import type { Logger } from '../src/logger.ts';
import type { HistoryBatch } from './history-batch.ts';
import type { StoredJob } from './job-history.ts';
import { JobLedger } from './job-ledger.ts';
import { resultOf, sentResultAfterRestart } from './job-results.ts';
import {
  type Job,
  type JobResult,
  type JobStatus,
  type JobSummary,
  publicResult,
  type ResultStatus,
  requestIdFor,
  type StoredResult,
  withOutcome,
} from './job-types.ts';
import { type PacingClock, RolloutGate } from './rollout.ts';
import type { DeviceEntry, FanoutResult, SubmitOptions, TaskView } from './types.ts';

/** What a job needs of the store controller (controller/store-controller.ts). */
export interface JobLink {
  device(deviceId: string): DeviceEntry | undefined;
  tasks(deviceId: string): TaskView[];
  submit(script: string, options: SubmitOptions): Promise<FanoutResult[]>;
  cancel(deviceId: string, requestId: string): void;
  /** Puts what was published so far on the wire now (StoreController.flushWrites). */
  flushWrites(): void;
}

/** Scripts put on the wire at a time while a job sends to many registers at once. */
const SEND_CHUNK = 50;

export interface JobRunDeps {
  link: JobLink;
  history: HistoryBatch;
  clock: PacingClock;
  logger: Logger;
  /** The job changed (a result, or its status); `result` is the result that changed, if one did. */
  onChange: (job: JobSummary, result?: JobResult) => void;
  /** The engine's own decisions for the audit trail (job_aborted, job_completed). */
  onAudit: (action: 'job_aborted' | 'job_completed', detail: string) => void;
  /** Nothing is open any more: the engine forgets the run. */
  onEnded: (jobId: string) => void;
}

export class JobRun {
  readonly jobId: string;
  private readonly job: StoredJob;
  private readonly deps: JobRunDeps;
  private readonly results: JobLedger;
  private readonly gate: RolloutGate;
  private readonly deadlineAt: number;
  /** Registers whose submission is being followed right now. */
  private readonly inFlight = new Set<string>();
  private deadlineTimer: NodeJS.Timeout | undefined;
  private paceTimer: unknown;
  private stopped = false;

  constructor(job: StoredJob, deps: JobRunDeps) {
    this.job = job;
    this.jobId = job.jobId;
    this.deps = deps;
    this.results = new JobLedger(job);
    this.gate = new RolloutGate(job.rollout, deps.clock);
    this.deadlineAt = Date.parse(job.deadlineAt);
  }

  get status(): JobStatus {
    return this.job.status;
  }

  summary(): JobSummary {
    const { results: _results, ...rest } = this.job;
    return withOutcome({ ...rest, counts: this.results.countsNow() });
  }

  /** The job with its results as they are now: what the history holds once the batch is committed. */
  snapshot(): Job {
    return { ...this.summary(), results: [...this.results.values()].map(publicResult) };
  }

  /**
   * Starts a new job: the registers it can be sent to at once are marked sent in the job's own
   * insert (`insert`, one transaction), not by an update each after it (500 updates per job to
   * 500 registers), then sent.
   */
  startNew(insert: (job: StoredJob) => void): void {
    const sending = this.claimSends(false);
    insert({ ...this.job, results: [...this.results.values()] });
    this.armDeadline();
    this.followAll(sending);
    this.checkEnded();
  }

  /**
   * Starts (or, after a restart, resumes) the job. Results sent before a restart are settled
   * from the retained statuses first; the others are followed again with the same requestId,
   * which the register recognises, so nothing runs twice.
   */
  start(): void {
    const sentTimes = this.job.results.filter((r) => r.sentAt).map((r) => Date.parse(r.sentAt!));
    this.gate.restore(sentTimes);
    // A snapshot: settling one result may send the script to the next register (made RUNNING here).
    const sentBefore = [...this.results.values()].filter((result) => result.status === 'RUNNING');
    for (const result of sentBefore) {
      const settled = sentResultAfterRestart(
        result,
        this.deps.link,
        requestIdFor(this.jobId, result.deviceId),
      );
      if (settled) this.end(result.deviceId, settled);
      else if (this.deps.link.device(result.deviceId)?.online) this.follow(result.deviceId);
    }
    this.armDeadline();
    this.pump();
    this.checkEnded();
  }

  private armDeadline(): void {
    this.deadlineTimer = setTimeout(() => this.onDeadline(), Math.max(0, this.deadlineAt - Date.now()));
  }

  /** The controller stops: timers go; results in flight stay RUNNING in the history (resumable). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.deadlineTimer);
    if (this.paceTimer !== undefined) this.deps.clock.clearTimeout(this.paceTimer);
    this.paceTimer = undefined;
  }

  /** A register's directory entry changed: one that came online may now be sent the script. */
  onDevice(entry: DeviceEntry): void {
    const result = this.results.get(entry.deviceId);
    if (!result || this.stopped) return;
    if (result.status === 'RUNNING' && !this.inFlight.has(entry.deviceId)) {
      // Sent before a restart, not followed since: same boot, follow again; new boot, it is lost.
      if (result.sentBoot !== undefined && entry.bootId !== result.sentBoot) {
        this.end(entry.deviceId, { status: 'FAILURE', error: 'device restarted (new bootId)' });
      } else if (entry.online) this.follow(entry.deviceId);
      return;
    }
    if (result.status === 'PENDING' && entry.online) this.pump();
  }

  /** Stops sending; what is queued on registers is cancelled; running scripts finish. */
  halt(status: 'ABORTED' | 'CANCELLED'): boolean {
    if (this.job.status !== 'IN_PROGRESS') return false;
    this.job.status = status;
    this.deps.history.saveStatus(this.jobId, status, undefined);
    const reason = status === 'ABORTED' ? 'not sent: the job was aborted' : 'not sent: the job was cancelled';
    for (const result of this.results.values()) {
      if (result.status === 'PENDING') this.settle(result.deviceId, { status: 'CANCELLED', error: reason });
      else if (result.status === 'RUNNING') {
        // Contract: a cancel by requestId; a task already running is never cut and is recorded.
        this.deps.link.cancel(result.deviceId, requestIdFor(this.jobId, result.deviceId));
      }
    }
    this.changed();
    this.checkEnded();
    return true;
  }

  private pump(): void {
    const sending = this.claimSends(true);
    if (sending.length === 0) return;
    // Committed before publishing: a controller killed after this line resends with the same
    // requestId. Announced after publishing (at the end of the turn): the scripts go out first.
    this.deps.history.commitNow();
    this.followAll(sending);
  }

  /**
   * Follows each register, putting the scripts on the wire SEND_CHUNK at a time: mqtt.js holds
   * what it writes until the next tick, so the first registers would otherwise wait for the
   * 500th script and the rest of the request (docs/benchmarks.md, scenario 7).
   */
  private followAll(deviceIds: readonly string[]): void {
    for (let i = 0; i < deviceIds.length; i++) {
      this.follow(deviceIds[i]!);
      if ((i + 1) % SEND_CHUNK === 0 || i === deviceIds.length - 1) this.deps.link.flushWrites();
    }
  }

  /**
   * Marks RUNNING the PENDING registers that are online and within the rollout limits (setting
   * the pacing timer when the rate holds one back); `write`: queue each for the history (false:
   * the caller stores them). Returns them, to be followed.
   */
  private claimSends(write: boolean): string[] {
    // Every result's end pumps: once all are sent there is nothing to look through.
    if (this.results.pending.size === 0 || this.job.status !== 'IN_PROGRESS' || this.stopped) return [];
    if (this.paceTimer !== undefined) this.deps.clock.clearTimeout(this.paceTimer);
    this.paceTimer = undefined;
    const sending: string[] = [];
    const sentAt = new Date().toISOString();
    for (const deviceId of this.results.pending) {
      const entry = this.deps.link.device(deviceId);
      if (!entry?.online) continue;
      const wait = this.gate.waitFor(this.results.running);
      if (wait === Number.POSITIVE_INFINITY) break;
      if (wait > 0) {
        this.paceTimer = this.deps.clock.setTimeout(() => {
          this.paceTimer = undefined;
          this.pump();
        }, wait);
        break;
      }
      this.gate.record();
      this.update(deviceId, { status: 'RUNNING', sentAt, sentBoot: entry.bootId }, write);
      sending.push(deviceId);
    }
    return sending;
  }

  /** Submits (again) with the job's requestId for the register and waits for its result. */
  private follow(deviceId: string): void {
    const deadlineMs = this.deadlineAt - Date.now();
    if (deadlineMs <= 0) {
      this.end(deviceId, { status: 'NO_ANSWER', error: 'deadline passed' });
      return;
    }
    this.inFlight.add(deviceId);
    const options: SubmitOptions = {
      to: [deviceId],
      deadlineMs,
      notAfter: this.deadlineAt,
      requestId: requestIdFor(this.jobId, deviceId),
    };
    this.deps.link.submit(this.job.script, options).then(
      ([fanout]) => this.onFanoutResult(deviceId, fanout),
      (error: Error) => this.onFanoutResult(deviceId, undefined, error),
    );
  }

  private onFanoutResult(deviceId: string, fanout: FanoutResult | undefined, error?: Error): void {
    this.inFlight.delete(deviceId);
    if (this.stopped || this.results.get(deviceId)?.status !== 'RUNNING') return;
    if (fanout?.status === 'OFFLINE') return; // gone since; onDevice follows it when it is back
    this.end(
      deviceId,
      fanout ? resultOf(fanout) : { status: 'FAILURE', error: `not sent: ${error?.message}` },
    );
  }

  private onDeadline(): void {
    if (this.stopped) return;
    for (const result of this.results.values()) {
      if (result.status === 'PENDING') {
        const online = this.deps.link.device(result.deviceId)?.online;
        // Never seen online: OFFLINE. Online but held back by the rollout limits: NO_ANSWER.
        if (online) this.end(result.deviceId, { status: 'NO_ANSWER', error: 'not sent before the deadline' });
        else this.end(result.deviceId, { status: 'OFFLINE', error: 'not online before the deadline' });
      } else if (result.status === 'RUNNING' && !this.inFlight.has(result.deviceId)) {
        this.end(result.deviceId, { status: 'NO_ANSWER', error: 'no end status before the deadline' });
      }
    }
  }

  private end(deviceId: string, outcome: Partial<StoredResult> & { status: ResultStatus }): void {
    this.settle(deviceId, outcome);
    this.checkAbort();
    this.pump();
    this.checkEnded();
  }

  /** A result ends (without the follow-ups of end(): halt() makes them once for all). */
  private settle(deviceId: string, outcome: Partial<StoredResult> & { status: ResultStatus }): void {
    this.update(deviceId, { ...outcome, endedAt: new Date().toISOString() });
  }

  private update(deviceId: string, fields: Partial<StoredResult>, write = true): void {
    const next = this.results.update(deviceId, fields);
    if (write) this.deps.history.saveResult(this.jobId, next);
    this.changed(publicResult(next));
  }

  private checkAbort(): void {
    const rule = this.job.abort;
    if (!rule || this.job.status !== 'IN_PROGRESS') return;
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
    if (this.job.status === 'IN_PROGRESS') {
      this.job.status = 'COMPLETED';
      this.deps.onAudit('job_completed', `job ${this.jobId}: ${JSON.stringify(this.results.countsNow())}`);
    }
    this.job.endedAt = new Date().toISOString();
    this.deps.history.saveStatus(this.jobId, this.job.status, this.job.endedAt);
    this.stop();
    this.changed();
    this.deps.onEnded(this.jobId);
  }

  /** Announced once the change is committed (HistoryBatch), with the job as it is now. */
  private changed(result?: JobResult): void {
    const summary = this.summary();
    this.deps.history.afterCommit(() => this.deps.onChange(summary, result));
  }
}
