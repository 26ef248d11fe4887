// The jobs list: progress, counts, per-register results and cancel buttons.
import { api } from './api.js';
import { $, el, when } from './dom.js';
import { jobButtons, rolloutLine } from './job-controls.js';
import { showFailure } from './session.js';
import { state } from './state.js';

function ended(counts) {
  return counts.total - counts.pending - counts.running;
}

/** Results whose script ran (to an end or not): never-sent OFFLINE and CANCELLED ones did not. */
function ran(counts) {
  return counts.finished + counts.failed + counts.noAnswer;
}

// An ended job's outcome in words (the colour comes from the class of the same name).
const OUTCOME_WORDS = { SUCCEEDED: 'Succeeded', PARTIAL: 'Partly succeeded', FAILED: 'Failed' };

function outcomeBadge(job) {
  if (!job.outcome) return undefined;
  const c = job.counts;
  return el(
    'span',
    { class: `outcome ${job.outcome}`, 'data-role': 'job-outcome' },
    `${OUTCOME_WORDS[job.outcome] ?? job.outcome}: ${c.finished} of ${c.total} finished`,
  );
}

function resultsTable(jobId) {
  const results = state.results.get(jobId);
  if (!results || !state.loaded.has(jobId))
    return el('p', { class: 'muted' }, 'Open to load the results of each register.');
  const body = el('tbody');
  for (const r of [...results.values()].sort((a, b) => a.deviceId.localeCompare(b.deviceId))) {
    body.append(
      el(
        'tr',
        {},
        el('th', { scope: 'row' }, r.deviceId),
        el('td', {}, el('span', { class: `status ${r.status}` }, r.status)),
        el('td', {}, r.taskId === undefined ? '' : String(r.taskId)),
        el('td', {}, r.report !== undefined ? el('pre', {}, r.report) : (r.error ?? '')),
        el('td', {}, when(r.endedAt ?? r.sentAt)),
      ),
    );
  }
  const head = el(
    'thead',
    {},
    el(
      'tr',
      {},
      ...['Register', 'Result', 'Task', 'Report or error', 'Time'].map((h) => el('th', { scope: 'col' }, h)),
    ),
  );
  return el(
    'div',
    { class: 'table-wrap' },
    el('table', {}, el('caption', { class: 'visually-hidden' }, `Results of job ${jobId}`), head, body),
  );
}

export function renderJob(job) {
  const list = $('jobs');
  let item = list.querySelector(`li[data-job="${CSS.escape(job.jobId)}"]`);
  const title = job.name ? `${job.name} (${job.jobId})` : job.jobId;
  const done = ended(job.counts);
  const c = job.counts;
  const summary = `${done} of ${c.total} ended: ${c.finished} finished, ${c.failed} failed, ${c.offline} offline, ${c.noAnswer} no answer, ${c.cancelled} cancelled; ${c.running} running, ${c.pending} pending`;
  const progressId = `progress-${job.jobId}`;
  const open = item?.querySelector('details')?.open ?? false;
  const details = el('details', { open }, el('summary', {}, 'Results per register'), resultsTable(job.jobId));
  details.addEventListener('toggle', () => {
    if (details.open && !state.loaded.has(job.jobId)) loadJob(job.jobId).catch(showFailure);
  });
  const target =
    job.target === undefined
      ? 'target loading'
      : job.target.group !== undefined
        ? `group ${job.target.group}`
        : `registers ${job.target.devices.join(', ')}`;
  const content = [
    el(
      'header',
      {},
      // The id on a line of its own, cut with an ellipsis on a phone instead of wrapping a UUID.
      el('h3', {}, job.name ?? '', el('span', { class: 'job-id', title: job.jobId }, job.jobId)),
      el('span', { class: `status ${job.status}`, 'data-role': 'job-status' }, job.status),
      outcomeBadge(job),
      ...jobButtons(job, title, onJob),
    ),
    el(
      'p',
      { class: 'muted' },
      `${target} · by ${job.createdBy} · ${when(job.createdAt)}${job.endedAt ? ` · ended ${when(job.endedAt)}` : ''}`,
    ),
    el('label', { for: progressId, class: 'visually-hidden' }, `Progress of job ${title}`),
    el('progress', {
      id: progressId,
      max: Math.max(c.total, 1),
      value: ran(c),
      'aria-valuetext': `${ran(c)} of ${c.total} ran`,
    }),
    el('p', { 'data-role': 'job-counts' }, summary),
    rolloutLine(job),
    details,
  ];
  if (!item) {
    item = el('li', { class: 'job card', 'data-job': job.jobId });
    list.prepend(item);
  }
  item.replaceChildren(...content);
  $('jobs-empty').hidden = state.jobs.size > 0;
}

export async function loadJob(jobId) {
  onJob(await api('GET', `/api/jobs/${encodeURIComponent(jobId)}`));
}

export async function cancelJob(jobId) {
  try {
    const job = await api('POST', `/api/jobs/${encodeURIComponent(jobId)}/cancel`);
    onJob(job);
  } catch (error) {
    showFailure(error);
  }
}

// An answer (POST /api/jobs, GET /api/jobs/{id}) can reach the page after the events that
// followed it: a job to a few registers ends within milliseconds. So whatever arrives, the more
// advanced state is kept, never a stale one over a newer one.

/** Higher is later: an ended job, then more results ended, then more running. */
export function jobRank(job) {
  return (job.endedAt ? 1 : 0) * 1e9 + ended(job.counts) * (job.counts.total + 1) + job.counts.running;
}

function resultRank(result) {
  return result.status === 'PENDING' ? 0 : result.status === 'RUNNING' ? 1 : 2;
}

export function keepNewer(map, key, value, rank) {
  const held = map.get(key);
  if (!held || rank(value) >= rank(held)) map.set(key, value);
}

/** Jobs heard of in an event before being read: read once (events carry no target). */
const reading = new Set();

export function onJob(data) {
  const { result, results, ...summary } = data;
  const { jobId } = summary;
  const held = state.jobs.get(jobId);
  if (summary.target === undefined && held?.target !== undefined) summary.target = held.target;
  if (summary.target === undefined && !reading.has(jobId)) {
    reading.add(jobId);
    loadJob(jobId).catch(showFailure);
  }
  keepNewer(state.jobs, jobId, summary, jobRank);
  const kept = state.jobs.get(jobId);
  if (kept.target === undefined && summary.target !== undefined) kept.target = summary.target;
  if (!state.results.has(jobId)) state.results.set(jobId, new Map());
  const known = state.results.get(jobId);
  for (const r of results ?? []) keepNewer(known, r.deviceId, r, resultRank);
  if (results) state.loaded.add(jobId);
  if (result) keepNewer(known, result.deviceId, result, resultRank);
  renderJob(state.jobs.get(jobId));
}
