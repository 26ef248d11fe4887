/**
 * Prometheus metrics of the controller service, next to the HTTP ones of src/metrics.ts:
 * results by final status, jobs by final status, jobs in progress, registers known and online,
 * replies dropped because no result may be decided by them (contract 3.1).
 * They follow the engine's and the directory's events; stop() removes them from the registry.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { JobEngine } from '../job-engine.ts';
import type { JobResult, JobSummary } from '../job-types.ts';
import type { DirectoryView } from './service-app.ts';

export const SERVICE_METRICS = {
  results: 'regbridge_controller_results_total',
  jobs: 'regbridge_controller_jobs_ended_total',
  active: 'regbridge_controller_jobs_in_progress',
  devices: 'regbridge_controller_devices',
  droppedReplies: 'regbridge_controller_replies_dropped_total',
} as const;

export function createServiceMetrics(
  registry: Registry,
  engine: JobEngine,
  directory: DirectoryView,
): { stop(): void } {
  const registers = [registry];
  const results = new Counter({
    name: SERVICE_METRICS.results,
    help: 'Job results that ended, by status',
    labelNames: ['status'] as const,
    registers,
  });
  const jobs = new Counter({
    name: SERVICE_METRICS.jobs,
    help: 'Jobs that ended, by status (COMPLETED, ABORTED, CANCELLED)',
    labelNames: ['status'] as const,
    registers,
  });
  new Gauge({
    name: SERVICE_METRICS.active,
    help: 'Jobs in progress',
    registers,
    collect() {
      this.set(engine.activeCount);
    },
  });
  new Gauge({
    name: SERVICE_METRICS.devices,
    help: 'Registers known to the controller, by online state',
    labelNames: ['online'] as const,
    registers,
    collect() {
      const devices = directory.devices();
      const online = devices.filter((d) => d.online).length;
      this.set({ online: 'true' }, online);
      this.set({ online: 'false' }, devices.length - online);
    },
  });
  new Counter({
    name: SERVICE_METRICS.droppedReplies,
    help: 'MQTT replies dropped: forged (topic and payload disagree, or invalid), not_sent (the submission was not sent to that register), unknown_request (no submission in flight)',
    labelNames: ['reason'] as const,
    registers,
    collect() {
      // The controller counts; the counter shows its totals.
      this.reset();
      for (const [reason, count] of Object.entries(directory.droppedReplies ?? {}))
        this.inc({ reason }, count);
    },
  });
  const onJob = (job: JobSummary, result: JobResult | undefined): void => {
    if (result?.endedAt !== undefined && result.status !== 'PENDING' && result.status !== 'RUNNING') {
      results.inc({ status: result.status });
    }
    if (result === undefined && job.endedAt !== undefined) jobs.inc({ status: job.status });
  };
  engine.on('job', onJob);
  return {
    stop() {
      engine.off('job', onJob);
      for (const name of Object.values(SERVICE_METRICS)) registry.removeSingleMetric(name);
    },
  };
}
