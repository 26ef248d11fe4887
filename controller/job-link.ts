/** What one job's run needs of the controller around it (controller/job-run.ts). */
import type { Logger } from '../src/logger.ts';
import type { HistoryBatch } from './history-batch.ts';
import type { JobResult, JobSummary } from './job-types.ts';
import type { PacingClock } from './rollout.ts';
import type { DeviceEntry, FanoutResult, SubmitOptions, TaskView } from './types.ts';

/** What a job needs of the store controller (controller/store-controller.ts). */
export interface JobLink {
  device(deviceId: string): DeviceEntry | undefined;
  tasks(deviceId: string): TaskView[];
  submit(script: string, options: SubmitOptions): Promise<FanoutResult[]>;
  cancel(deviceId: string, requestId: string): void;
  /** Ends the wait for a submission now: its devices still missing are NO_ANSWER. */
  expire(requestId: string, reason: string): void;
  /** Puts what was published so far on the wire now (StoreController.flushWrites). */
  flushWrites(): void;
}

export interface JobRunDeps {
  link: JobLink;
  history: HistoryBatch;
  /** Pacing, retry backoff, attempt time-outs, start times and windows (tests drive it). */
  clock: PacingClock;
  logger: Logger;
  /** The job changed (a result, or its status); `result` is the result that changed, if one did. */
  onChange: (job: JobSummary, result?: JobResult) => void;
  /** The engine's own decisions for the audit trail. */
  onAudit: (action: 'job_aborted' | 'job_completed' | 'job_paused', detail: string) => void;
  /** Nothing is open any more: the engine forgets the run. */
  onEnded: (jobId: string) => void;
}
