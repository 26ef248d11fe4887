/**
 * A job's deadline (its endAt for a continuous job): a timer on the real clock, and what the
 * results still open become when it passes (docs/controller.md, "Jobs").
 */
import type { Outcome } from './job-results.ts';
import type { StoredResult } from './job-types.ts';

/** setTimeout takes at most 2^31-1 ms (~24.8 days); a longer wait is armed again when it fires. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export class DeadlineTimer {
  readonly at: number;
  private readonly onPassed: () => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(deadlineAt: string, onPassed: () => void) {
    this.at = Date.parse(deadlineAt);
    this.onPassed = onPassed;
  }

  arm(): void {
    const wait = Math.min(MAX_TIMEOUT_MS, Math.max(0, this.at - Date.now()));
    this.timer = setTimeout(() => {
      if (Date.now() < this.at) this.arm();
      else this.onPassed();
    }, wait);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/**
 * What a result becomes at the deadline; undefined when it stays (ended already, or followed:
 * its submission ends at the same deadline).
 */
export function atDeadline(result: StoredResult, online: boolean, followed: boolean): Outcome | undefined {
  if (result.status === 'PENDING') {
    // Never seen online: OFFLINE. Online but held back (limits, waves, a pause): NO_ANSWER.
    return online
      ? { status: 'NO_ANSWER', error: 'not sent before the deadline' }
      : { status: 'OFFLINE', error: 'not online before the deadline' };
  }
  if (result.status === 'RUNNING' && !followed) {
    return { status: 'NO_ANSWER', error: 'no end status before the deadline' };
  }
  return undefined;
}
