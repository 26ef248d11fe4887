/**
 * Sending one job's script and following each register's submission: which PENDING registers
 * may be sent now (their wave open, online, within the rollout limits), the scripts put on the
 * wire in chunks, and what each answer means for the result (docs/controller.md, "Jobs").
 */
import { notRunReason } from './job-attempts.ts';
import type { JobControl } from './job-control.ts';
import type { DeadlineTimer } from './job-deadline.ts';
import type { StoredJob } from './job-history.ts';
import type { JobLedger } from './job-ledger.ts';
import type { JobRunDeps } from './job-link.ts';
import { type Outcome, resultOf, sentResultAfterRestart } from './job-results.ts';
import { type JobRetry, notRunDetail } from './job-retry.ts';
import { attemptsOf, type RetryOn, requestIdFor, type StoredResult } from './job-types.ts';
import type { RolloutGate } from './rollout.ts';
import type { FanoutResult, SubmitOptions } from './types.ts';

/** Scripts put on the wire at a time while a job sends to many registers at once. */
const SEND_CHUNK = 50;

/** The run a job's sends belong to (controller/job-run.ts): its parts and its result steps. */
export interface SendHost {
  readonly job: StoredJob;
  readonly results: JobLedger;
  readonly gate: RolloutGate;
  readonly control: JobControl;
  readonly retry: JobRetry | undefined;
  readonly deadline: DeadlineTimer;
  readonly deps: JobRunDeps;
  stopped(): boolean;
  deadlinePassed(): boolean;
  /** `write`: queue the change for the history (false: the caller stores it). */
  update(deviceId: string, fields: Partial<StoredResult>, write: boolean): void;
  settle(deviceId: string, outcome: Outcome, write: boolean): void;
  end(deviceId: string, outcome: Outcome): void;
  attemptNotRun(deviceId: string, reason: RetryOn, detail: string, write: boolean): void;
  checkAbort(): void;
  checkEnded(): void;
}

export class JobSends {
  private readonly host: SendHost;
  /** Registers whose submission is being followed right now. */
  private readonly inFlight = new Set<string>();
  private paceTimer: unknown;

  constructor(host: SendHost) {
    this.host = host;
  }

  /** The register's submission is being followed now. */
  following(deviceId: string): boolean {
    return this.inFlight.has(deviceId);
  }

  /** Sends to the registers that may be sent the script now. */
  pump(): void {
    const sending = this.claim(true);
    if (sending.length === 0) return;
    // Committed before publishing: a controller killed after this line resends with the same
    // requestId. Announced after publishing (at the end of the turn): the scripts go out first.
    this.host.deps.history.commitNow();
    this.followAll(sending);
  }

  stop(): void {
    if (this.paceTimer !== undefined) this.host.deps.clock.clearTimeout(this.paceTimer);
    this.paceTimer = undefined;
  }

  /**
   * Follows each register, putting the scripts on the wire SEND_CHUNK at a time: mqtt.js holds
   * what it writes until the next tick (docs/benchmarks.md, scenario 7).
   */
  followAll(deviceIds: readonly string[]): void {
    for (let i = 0; i < deviceIds.length; i++) {
      this.follow(deviceIds[i]!);
      if ((i + 1) % SEND_CHUNK === 0 || i === deviceIds.length - 1) this.host.deps.link.flushWrites();
    }
  }

  /**
   * Marks RUNNING the PENDING registers that may be sent now (the job IN_PROGRESS, their wave
   * open, no retry waiting, online, within the rollout limits); with retry, a register offline
   * at its turn ends that attempt. `write`: queue each for the history (false: the caller stores
   * them). Returns them, to be followed.
   */
  claim(write: boolean): string[] {
    const { host } = this;
    const { results, deps } = host;
    if (results.pending.size === 0 || host.job.status !== 'IN_PROGRESS' || host.stopped()) return [];
    this.stop();
    const sending: string[] = [];
    const sentAt = new Date().toISOString();
    const now = deps.clock.now();
    for (const deviceId of [...results.pending]) {
      const result = results.get(deviceId)!;
      if (!host.control.waveOpen(deviceId)) continue;
      if (result.nextAttemptAt !== undefined && Date.parse(result.nextAttemptAt) > now) continue;
      const entry = deps.link.device(deviceId);
      if (!entry?.online) {
        if (host.retry && (attemptsOf(result) === 0 || result.nextAttemptAt !== undefined)) {
          host.attemptNotRun(deviceId, 'OFFLINE', 'not online', write);
        }
        continue;
      }
      // A task of this requestId already ended (an earlier attempt answered late): that is the result.
      if (attemptsOf(result) > 0) {
        const known = sentResultAfterRestart(result, deps.link, this.requestId(deviceId));
        if (known) {
          host.settle(deviceId, { ...known, nextAttemptAt: undefined }, write);
          continue;
        }
      }
      const wait = host.gate.waitFor(results.running);
      if (wait === Number.POSITIVE_INFINITY) break;
      if (wait > 0) {
        this.paceTimer = deps.clock.setTimeout(() => {
          this.paceTimer = undefined;
          this.pump();
        }, wait);
        break;
      }
      host.gate.record();
      const fields = { status: 'RUNNING' as const, sentAt, sentBoot: entry.bootId };
      host.update(deviceId, { ...fields, attempts: attemptsOf(result) + 1, nextAttemptAt: undefined }, write);
      sending.push(deviceId);
    }
    return sending;
  }

  /** Submits (again) with the job's requestId for the register and waits for its result. */
  follow(deviceId: string): void {
    const { host } = this;
    const { deadline, deps } = host;
    const deadlineMs = deadline.at - Date.now();
    if (deadlineMs <= 0) {
      host.end(deviceId, { status: 'NO_ANSWER', error: 'deadline passed' });
      return;
    }
    this.inFlight.add(deviceId);
    const requestId = this.requestId(deviceId);
    const options: SubmitOptions = { to: [deviceId], deadlineMs, notAfter: deadline.at, requestId };
    host.retry?.startAttempt(deviceId, () =>
      deps.link.expire(requestId, 'no answer within the attempt time-out'),
    );
    deps.link.submit(host.job.script, options).then(
      ([fanout]) => this.onFanoutResult(deviceId, fanout),
      (error: Error) => this.onFanoutResult(deviceId, undefined, error),
    );
  }

  private onFanoutResult(deviceId: string, fanout: FanoutResult | undefined, error?: Error): void {
    const { host } = this;
    this.inFlight.delete(deviceId);
    host.retry?.endAttempt(deviceId);
    if (host.stopped() || host.results.get(deviceId)?.status !== 'RUNNING') return;
    if (host.retry && !host.deadlinePassed()) {
      const requestId = this.requestId(deviceId);
      const tasks = host.deps.link.tasks(deviceId).filter((t) => t.requestId === requestId);
      const reason = notRunReason(fanout, tasks);
      if (reason) {
        host.attemptNotRun(deviceId, reason, notRunDetail(fanout), true);
        host.checkAbort();
        this.pump();
        host.checkEnded();
        return;
      }
    }
    if (fanout?.status === 'OFFLINE') return; // gone since; onDevice follows it when it is back
    host.end(
      deviceId,
      fanout ? resultOf(fanout) : { status: 'FAILURE', error: `not sent: ${error?.message}` },
    );
  }

  private requestId(deviceId: string): string {
    return requestIdFor(this.host.job.jobId, deviceId);
  }
}
