/**
 * Fiscal-safe retry (contract 7.5; docs/controller.md, "Retry"): which ended attempts may be tried
 * again. Only an attempt that provably did not run: never sent (OFFLINE), refused by the register
 * without a task (REFUSED), or no answer with no task known (NO_ANSWER). A script that started,
 * or may have, is never sent again automatically. Pure.
 */
import type { Outcome } from './job-results.ts';
import {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_BACKOFF_MS,
  RETRY_ON,
  type RetryOn,
  type RetryRule,
} from './job-types.ts';
import type { FanoutResult, TaskView } from './types.ts';

/** Why an attempt provably did not run, or undefined when it may have run. */
export function notRunReason(
  fanout: FanoutResult | undefined,
  tasksOfRequest: readonly TaskView[],
): RetryOn | undefined {
  // A status of this requestId, of any boot: the register has (had) the task. A reply or status
  // seen by the submission gave it the task's id (controller/fanout.ts).
  if (tasksOfRequest.length > 0 || !fanout) return undefined;
  if (fanout.status === 'OFFLINE') return 'OFFLINE';
  if (fanout.status === 'FAILURE' && fanout.refused === true && fanout.taskId === undefined) return 'REFUSED';
  if (fanout.status === 'NO_ANSWER' && fanout.taskId === undefined) return 'NO_ANSWER';
  return undefined;
}

export interface RetryPlan {
  maxAttempts: number;
  backoffMs: number;
  attemptTimeoutMs: number;
  on: ReadonlySet<RetryOn>;
}

export function retryPlan(rule: RetryRule | undefined): RetryPlan | undefined {
  if (!rule) return undefined;
  return {
    maxAttempts: rule.maxAttempts,
    backoffMs: rule.backoffMs ?? DEFAULT_BACKOFF_MS,
    attemptTimeoutMs: rule.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS,
    on: new Set(rule.on ?? RETRY_ON),
  };
}

/** The final result of an attempt that was not retried (REFUSED is a FAILURE without a task). */
export function finalOutcome(reason: RetryOn, detail: string, attempts: number): Outcome {
  const of = attempts > 1 ? ` (attempt ${attempts})` : '';
  switch (reason) {
    case 'OFFLINE':
      return { status: 'OFFLINE', error: `not online when its turn came${of}` };
    case 'REFUSED':
      return { status: 'FAILURE', error: `${detail}${of}` };
    case 'NO_ANSWER':
      return { status: 'NO_ANSWER', error: `${detail}${of}` };
  }
}
