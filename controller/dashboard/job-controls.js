// A job's rollout controls in the jobs list (docs/controller.md, "Time and rollout control"):
// pause, resume, cancel and rerun buttons, the wave reached, why a job is paused, retries.
import { api } from './api.js';
import { el } from './dom.js';
import { showFailure } from './session.js';

const ENDED = ['COMPLETED', 'ABORTED', 'CANCELLED'];

async function post(jobId, action, body, onJob) {
  try {
    onJob(await api('POST', `/api/jobs/${encodeURIComponent(jobId)}/${action}`, body));
  } catch (error) {
    showFailure(error);
  }
}

function button(label, title, onclick, className) {
  return el(
    'button',
    {
      type: 'button',
      onclick,
      'aria-label': `${label} job ${title}`,
      ...(className && { class: className }),
    },
    label,
  );
}

/** Buttons for what may be done to the job now. */
export function jobButtons(job, title, onJob) {
  if (ENDED.includes(job.status)) {
    const again = ['FAILURE', 'OFFLINE', 'NO_ANSWER', 'CANCELLED'];
    const c = job.counts;
    if (c.failed + c.offline + c.noAnswer + c.cancelled === 0) return [];
    return [button('Rerun', title, () => post(job.jobId, 'rerun', { statuses: again }, onJob), 'secondary')];
  }
  return [
    job.status === 'PAUSED'
      ? button('Resume', title, () => post(job.jobId, 'resume', undefined, onJob))
      : button('Pause', title, () => post(job.jobId, 'pause', undefined, onJob), 'secondary'),
    button('Cancel', title, () => post(job.jobId, 'cancel', undefined, onJob), 'danger'),
  ];
}

/** One line on waves, pause, schedule and retry, or nothing. */
export function rolloutLine(job) {
  const parts = [];
  if (job.wave) parts.push(`wave ${job.wave.current} of ${job.wave.count}`);
  if (job.pausedReason) parts.push(`paused: ${job.pausedReason}`);
  if (job.startAt && job.status === 'SCHEDULED')
    parts.push(`starts ${new Date(job.startAt).toLocaleString()}`);
  if (job.retry) parts.push(`retry up to ${job.retry.maxAttempts} attempts`);
  if (job.scheduleId) parts.push('from a schedule');
  if (job.rerunOf) parts.push(`rerun of ${job.rerunOf}`);
  return parts.length > 0 ? el('p', { 'data-role': 'job-rollout' }, parts.join(' · ')) : undefined;
}
