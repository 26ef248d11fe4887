/**
 * Resuming a job after a restart of the controller (docs/controller.md, "Jobs"): a result sent
 * before it is settled from the statuses the registers retained, or followed again with the same
 * requestId, which the register recognises, so nothing runs twice.
 */

import type { JobLink } from './job-link.ts';
import { type Outcome, sentResultAfterRestart } from './job-results.ts';
import type { StoredResult } from './job-types.ts';
import type { DeviceEntry } from './types.ts';

/** What to do with a result sent before the restart: settle it, follow it again, or wait for its register. */
export type ResumeStep = { settle: Outcome } | 'follow' | 'wait';

/** At start: the retained status settles it; else an online register is followed again. */
export function resumeSent(result: StoredResult, link: JobLink, requestId: string): ResumeStep {
  const settled = sentResultAfterRestart(result, link, requestId);
  if (settled) return { settle: settled };
  return link.device(result.deviceId)?.online ? 'follow' : 'wait';
}

/** Its register's entry changed: same boot, follow again once online; a new boot lost the task. */
export function resumeOnReturn(result: StoredResult, entry: DeviceEntry): ResumeStep {
  if (result.sentBoot !== undefined && entry.bootId !== result.sentBoot) {
    return { settle: { status: 'FAILURE', error: 'device restarted (new bootId)' } };
  }
  return entry.online ? 'follow' : 'wait';
}

/** The send times the rollout gate counts (rate limits hold across the restart). */
export function sentTimes(results: readonly StoredResult[]): number[] {
  return results.filter((r) => r.sentAt).map((r) => Date.parse(r.sentAt!));
}
