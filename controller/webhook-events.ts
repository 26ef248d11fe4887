/**
 * What the controller announces to webhooks (docs/controller.md, "Webhooks"): jobs created (from
 * the audit trail, so not again on resume), ended, waiting for approval; registers going offline
 * or online; missed schedule runs. Each becomes a delivery row; nothing here waits for a receiver.
 */

import type { AuditEntry } from './audit-log.ts';
import type { JobCounts, JobSummary } from './job-types.ts';
import type { MissedRun } from './scheduler.ts';
import { splitKey } from './store-keys.ts';
import type { DeviceEntry } from './types.ts';
import type { WebhookEvent } from './webhooks.ts';

export interface EventSources {
  engine: {
    on(event: 'job', listener: (summary: JobSummary) => void): unknown;
    off(event: 'job', listener: (summary: JobSummary) => void): unknown;
    get(jobId: string): JobSummary | undefined;
  };
  audit: { onEntry(listener: (entry: AuditEntry) => void): () => void };
  directory: {
    on(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
    off(event: 'device', listener: (entry: DeviceEntry) => void): unknown;
  };
  scheduler: {
    on(event: 'missed', listener: (run: MissedRun) => void): unknown;
    off(event: 'missed', listener: (run: MissedRun) => void): unknown;
  };
}

export function outcomeOf(counts: JobCounts): 'SUCCEEDED' | 'PARTIAL' | 'FAILED' {
  if (counts.total > 0 && counts.finished === counts.total) return 'SUCCEEDED';
  return counts.finished > 0 ? 'PARTIAL' : 'FAILED';
}

const ENDED: Record<string, WebhookEvent> = {
  COMPLETED: 'job.completed',
  ABORTED: 'job.aborted',
  CANCELLED: 'job.cancelled',
};

/** The job as announced: its summary without the script (which may be long), plus outcome when ended. */
function jobData(summary: JobSummary): Record<string, unknown> {
  const { script: _script, ...rest } = summary;
  delete (rest as { results?: unknown }).results;
  return rest.endedAt !== undefined ? { ...rest, outcome: outcomeOf(summary.counts) } : rest;
}

/** Connects the sources to `emit`; returns the function that disconnects them. */
export function announceToWebhooks(
  sources: EventSources,
  emit: (event: WebhookEvent, data: Record<string, unknown>) => void,
): () => void {
  const announcedEnd = new Set<string>();
  const announcedWaiting = new Set<string>();
  const online = new Map<string, boolean>();
  const onJob = (summary: JobSummary): void => {
    if (summary.status === 'WAITING_FOR_APPROVAL') {
      if (announcedWaiting.has(summary.jobId)) return;
      announcedWaiting.add(summary.jobId);
      if (announcedWaiting.size > 1000) announcedWaiting.delete(announcedWaiting.values().next().value!);
      // Queued like job.created (a microtask from the same create()), so it comes after it.
      const data = jobData(summary);
      queueMicrotask(() => emit('job.waiting_for_approval', data));
      return;
    }
    const event = ENDED[summary.status];
    if (event === undefined || summary.endedAt === undefined || announcedEnd.has(summary.jobId)) return;
    announcedEnd.add(summary.jobId);
    // Only recent ends can repeat (a late change of the same job): keep the set small.
    if (announcedEnd.size > 1000) announcedEnd.delete(announcedEnd.values().next().value!);
    emit(event, jobData(summary));
  };
  const offAudit = sources.audit.onEntry((entry) => {
    if (entry.action !== 'job_created') return;
    const jobId = /^job (\S+)/.exec(entry.detail)?.[1];
    if (jobId === undefined) return;
    // After the engine's create() has returned, not inside it.
    queueMicrotask(() => {
      const summary = sources.engine.get(jobId);
      if (summary) emit('job.created', jobData(summary));
    });
  });
  const onDevice = (entry: DeviceEntry): void => {
    const before = online.get(entry.deviceId);
    online.set(entry.deviceId, entry.online);
    if (before === undefined || before === entry.online) return;
    emit(entry.online ? 'device.online' : 'device.offline', {
      ...splitKey(entry.deviceId),
      groups: entry.groups,
      lastSeenAt: entry.lastSeen,
    });
  };
  const onMissed = (run: MissedRun): void => emit('schedule.missed', { ...run });
  sources.engine.on('job', onJob);
  sources.directory.on('device', onDevice);
  sources.scheduler.on('missed', onMissed);
  return () => {
    sources.engine.off('job', onJob);
    sources.directory.off('device', onDevice);
    sources.scheduler.off('missed', onMissed);
    offAudit();
  };
}
