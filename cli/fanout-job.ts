/**
 * `regbridge fanout` with --batch-size, --max-per-minute or --abort-failure-ratio: the script
 * runs as a job of the controller service's engine (docs/controller.md, "Jobs"), with the same
 * rollout, abort and deadline rules, its history in memory. Results print as fanout's.
 */
import { runJobToEnd } from '../controller/job-once.ts';
import { asFanoutResult } from '../controller/job-results.ts';
import type { JobSpec, JobTarget } from '../controller/job-types.ts';
import type { StoreController } from '../controller/store-controller.ts';
import type { FanoutResult, FanoutTarget } from '../controller/types.ts';
import type { Logger } from '../src/logger.ts';

export interface RolloutFlags {
  batchSize?: number | undefined;
  maxPerMinute?: number | undefined;
  abortFailureRatio?: number | undefined;
}

export function wantsJob(flags: RolloutFlags): boolean {
  return (
    flags.batchSize !== undefined || flags.maxPerMinute !== undefined || flags.abortFailureRatio !== undefined
  );
}

function jobTarget(to: FanoutTarget): JobTarget {
  if (to === 'all') return { group: 'all' };
  if (Array.isArray(to)) return { devices: [...to] };
  return { group: (to as { group: string }).group };
}

export async function fanoutAsJob(
  controller: StoreController,
  script: string,
  config: RolloutFlags & { to: FanoutTarget; deadline: number },
  options: { logger: Logger; signal: AbortSignal; progress: (done: number, total: number) => void },
): Promise<{ requestId: string; results: FanoutResult[] }> {
  const spec: JobSpec = {
    script,
    target: jobTarget(config.to),
    deadlineMs: config.deadline,
    ...((config.batchSize !== undefined || config.maxPerMinute !== undefined) && {
      rollout: {
        ...(config.batchSize !== undefined && { batchSize: config.batchSize }),
        ...(config.maxPerMinute !== undefined && { maxPerMinute: config.maxPerMinute }),
      },
    }),
    ...(config.abortFailureRatio !== undefined && { abort: { failureRatio: config.abortFailureRatio } }),
  };
  const job = await runJobToEnd(controller, spec, {
    logger: options.logger,
    signal: options.signal,
    onChange: (summary) => {
      const { total, pending, running } = summary.counts;
      options.progress(total - pending - running, total);
    },
  });
  return { requestId: job.jobId, results: job.results.map(asFanoutResult) };
}
