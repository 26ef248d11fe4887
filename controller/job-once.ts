/**
 * One job run to its end without the service: `regbridge fanout` with rollout flags and
 * `regbridge demo` use the service's engine with a history in memory, so the rollout, abort and
 * deadline rules are the same everywhere (docs/controller.md, "Jobs").
 */
import type { Logger } from '../src/logger.ts';
import { AuditLog } from './audit-log.ts';
import { openHistory } from './history-db.ts';
import { type EngineLink, JobEngine } from './job-engine.ts';
import { JobHistory } from './job-history.ts';
import type { Job, JobSpec, JobSummary } from './job-types.ts';

export interface RunJobOptions {
  logger: Logger;
  /** Every change of the job (progress bars). */
  onChange?: (job: JobSummary) => void;
  /** Aborted: the job is cancelled (what is still queued is cancelled, nothing more is sent). */
  signal?: AbortSignal;
}

/** Runs `spec` as a job and resolves with it once no result is open any more. */
export async function runJobToEnd(link: EngineLink, spec: JobSpec, options: RunJobOptions): Promise<Job> {
  const db = openHistory(':memory:');
  const history = new JobHistory(db);
  const engine = new JobEngine({ link, history, audit: new AuditLog(db), logger: options.logger });
  engine.start();
  try {
    const outcome = engine.create(spec, { user: 'cli', address: '' });
    if (outcome.kind === 'noTarget') throw new Error(outcome.message);
    if (outcome.kind !== 'created') throw new Error(`job not created: ${outcome.kind}`);
    const { jobId } = outcome.job;
    return await new Promise<Job>((resolve) => {
      const finish = (): void => {
        engine.off('job', onJob);
        options.signal?.removeEventListener('abort', onAbort);
        resolve(history.get(jobId)!);
      };
      const onJob = (job: JobSummary): void => {
        if (job.jobId !== jobId) return;
        options.onChange?.(job);
        if (job.endedAt !== undefined) finish();
      };
      const onAbort = (): void => void engine.cancel(jobId, { user: 'cli', address: '' });
      engine.on('job', onJob);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      if (history.get(jobId)?.endedAt !== undefined) finish();
    });
  } finally {
    engine.stop();
    db.close();
  }
}
