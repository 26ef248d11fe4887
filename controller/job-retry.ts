/**
 * Fiscal-safe retry's bookkeeping for one job (contract 7.5; job-attempts.ts decides what may be
 * tried again): the attempt time-out per register, what an attempt that did not run becomes, and
 * one backoff timer at the earliest attempt due.
 */
import { finalOutcome, type RetryPlan } from './job-attempts.ts';
import type { JobLedger } from './job-ledger.ts';
import type { Outcome } from './job-results.ts';
import { attemptsOf, type RetryOn, type StoredResult } from './job-types.ts';
import type { PacingClock } from './rollout.ts';
import type { FanoutResult } from './types.ts';

/** After an attempt that did not run: tried again (`again`, PENDING) or its final result. */
export type NotRunNext = { again: Partial<StoredResult> } | { final: Outcome };

export class JobRetry {
  readonly plan: RetryPlan;
  private readonly clock: PacingClock;
  private readonly onDue: () => void;
  /** The clock's handle per register whose attempt is being timed. */
  private readonly attemptTimers = new Map<string, unknown>();
  private backoffTimer: { at: number; handle: unknown } | undefined;

  /** `onDue`: an attempt's backoff is over (its register may be sent the script again). */
  constructor(plan: RetryPlan, clock: PacingClock, onDue: () => void) {
    this.plan = plan;
    this.clock = clock;
    this.onDue = onDue;
  }

  /** Times the register's attempt: `expire` ends its wait once the attempt time-out passes. */
  startAttempt(deviceId: string, expire: () => void): void {
    const handle = this.clock.setTimeout(() => {
      this.attemptTimers.delete(deviceId);
      expire();
    }, this.plan.attemptTimeoutMs);
    this.attemptTimers.set(deviceId, handle);
  }

  /** The register's attempt answered (or failed): its time-out goes. */
  endAttempt(deviceId: string): void {
    const timer = this.attemptTimers.get(deviceId);
    if (timer !== undefined) this.clock.clearTimeout(timer);
    this.attemptTimers.delete(deviceId);
  }

  /** An attempt that provably did not run: tried again after the backoff, or its final result. */
  afterNotRun(result: StoredResult, reason: RetryOn, detail: string, jobOver: boolean): NotRunNext {
    // An offline turn counts as an attempt too; a send counted its own when it was claimed.
    const attempts = attemptsOf(result) + (result.status === 'PENDING' ? 1 : 0);
    if (attempts < this.plan.maxAttempts && this.plan.on.has(reason) && !jobOver) {
      const at = this.clock.now() + this.plan.backoffMs;
      const error = `attempt ${attempts}: ${reason === 'OFFLINE' ? 'not online' : detail}; tried again`;
      return { again: { status: 'PENDING', attempts, nextAttemptAt: new Date(at).toISOString(), error } };
    }
    return { final: { ...finalOutcome(reason, detail, attempts), attempts, nextAttemptAt: undefined } };
  }

  /** One clock timer, at the earliest attempt due among the PENDING results. */
  arm(results: JobLedger): void {
    let earliest = Number.POSITIVE_INFINITY;
    for (const deviceId of results.pending) {
      const at = results.get(deviceId)?.nextAttemptAt;
      if (at !== undefined) earliest = Math.min(earliest, Date.parse(at));
    }
    if (this.backoffTimer?.at === earliest) return;
    if (this.backoffTimer) this.clock.clearTimeout(this.backoffTimer.handle);
    this.backoffTimer = undefined;
    if (!Number.isFinite(earliest)) return;
    const handle = this.clock.setTimeout(
      () => {
        this.backoffTimer = undefined;
        this.onDue();
      },
      Math.max(0, earliest - this.clock.now()),
    );
    this.backoffTimer = { at: earliest, handle };
  }

  stop(): void {
    if (this.backoffTimer) this.clock.clearTimeout(this.backoffTimer.handle);
    this.backoffTimer = undefined;
    for (const handle of this.attemptTimers.values()) this.clock.clearTimeout(handle);
    this.attemptTimers.clear();
  }
}

/** What the log and the result say of an attempt that did not run. */
export function notRunDetail(fanout: FanoutResult | undefined): string {
  if (fanout?.status === 'FAILURE') return fanout.error;
  if (fanout?.status === 'NO_ANSWER') return fanout.detail;
  return 'not online';
}
