// A job's actions (docs/controller.md, "Time and rollout control", "Approval"): only those that
// apply to the job now and that the session's role may use (GET /api/me); the API refuses the
// others anyway. Also the line on waves, pause, schedule and retry.
import { api } from './api.js';
import { el, when } from './dom.js';
import { jobPath } from './names.js';
import { navigate } from './router.js';
import { showFailure } from './session.js';
import { may, state } from './state.js';

const ENDED = ['COMPLETED', 'ABORTED', 'CANCELLED', 'DENIED'];

async function post(jobId, action, body, onJob) {
  try {
    const job = await api('POST', `/api/jobs/${encodeURIComponent(jobId)}/${action}`, body);
    onJob(job);
    // A rerun is a new job: its page is where it is followed.
    if (action === 'rerun') navigate(jobPath(job.jobId));
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

/** Buttons for what may be done to the job now, by this session. */
export function jobButtons(job, title, onJob) {
  const buttons = [];
  if (job.status === 'WAITING_FOR_APPROVAL' && may('approve') && job.createdBy !== state.me.user) {
    buttons.push(button('Approve', title, () => post(job.jobId, 'approve', {}, onJob)));
    buttons.push(button('Deny', title, () => post(job.jobId, 'deny', {}, onJob), 'secondary'));
  }
  if (!may('operate')) return buttons;
  if (ENDED.includes(job.status)) {
    const again = ['FAILURE', 'OFFLINE', 'NO_ANSWER', 'CANCELLED'];
    const c = job.counts;
    if (job.status === 'DENIED' || c.failed + c.offline + c.noAnswer + c.cancelled === 0) return buttons;
    return [
      ...buttons,
      button('Rerun', title, () => post(job.jobId, 'rerun', { statuses: again }, onJob), 'secondary'),
    ];
  }
  if (job.status === 'PAUSED')
    buttons.push(button('Resume', title, () => post(job.jobId, 'resume', undefined, onJob)));
  if (job.status === 'IN_PROGRESS' || job.status === 'SCHEDULED')
    buttons.push(button('Pause', title, () => post(job.jobId, 'pause', undefined, onJob), 'secondary'));
  buttons.push(button('Cancel', title, () => post(job.jobId, 'cancel', undefined, onJob), 'danger'));
  return buttons;
}

/** One line on waves, pause, schedule and retry, or nothing. */
export function rolloutLine(job) {
  const parts = [];
  if (job.wave) parts.push(`wave ${job.wave.current} of ${job.wave.count}`);
  if (job.pausedReason) parts.push(`paused: ${job.pausedReason}`);
  if (job.startAt && job.status === 'SCHEDULED') parts.push(`starts ${when(job.startAt)}`);
  if (job.retry) parts.push(`retry up to ${job.retry.maxAttempts} attempts`);
  if (job.scheduleId) parts.push('from a schedule');
  if (job.rerunOf) parts.push('a rerun');
  return parts.length > 0 ? el('p', { 'data-role': 'job-rollout' }, parts.join(' · ')) : undefined;
}
