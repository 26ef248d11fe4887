// The jobs page: every job of the history, newest first, with filters (status, outcome, name,
// who, when) kept in the address, and paging on through GET /api/jobs?before=. Jobs change live
// through the event stream; a new job joins the top of the unfiltered list.
import { api } from './api.js';
import { $, el, formParams, when } from './dom.js';
import { jobButtons, rolloutLine } from './job-controls.js';
import { deviceKey, jobPath, jobTitle, scriptName, targetName } from './names.js';
import { navigate, onShow, setTitle } from './router.js';
import { showFailure } from './session.js';
import { state } from './state.js';

const PAGE = 50;
const FILTERS = ['name', 'status', 'outcome', 'createdBy', 'from', 'to'];
let filtered = false;
let next;
/** Called with each job that changed (the job page follows its own job). */
const followers = [];

export function onJobChange(listener) {
  followers.push(listener);
}

export function ended(counts) {
  return counts.total - counts.pending - counts.running;
}

/** Results whose script ran (to an end or not): never-sent OFFLINE and CANCELLED ones did not. */
export function ran(counts) {
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

function countsLine(job) {
  const c = job.counts;
  return `${ended(c)} of ${c.total} ended: ${c.finished} finished, ${c.failed} failed, ${c.offline} offline, ${c.noAnswer} no answer, ${c.cancelled} cancelled; ${c.running} running, ${c.pending} pending`;
}

function progressBar(job, title) {
  const c = job.counts;
  const id = `progress-${job.jobId}`;
  return [
    el('label', { for: id, class: 'visually-hidden' }, `Progress of job ${title}`),
    el('progress', {
      id,
      max: Math.max(c.total, 1),
      value: ran(c),
      'aria-valuetext': `${ran(c)} of ${c.total} ran`,
    }),
  ];
}

function aboutLine(job) {
  const by = `by ${job.createdBy} · ${when(job.createdAt)}${job.endedAt ? ` · ended ${when(job.endedAt)}` : ''}`;
  // A job without a name is already called after its script and target.
  return job.name ? `${scriptName(job)} · ${targetName(job)} · ${by}` : by;
}

/** A job's header (after `heading`, if any), facts and progress: a card of the list, its page. */
export function jobCard(job, title, heading) {
  return [
    el(
      'header',
      {},
      heading,
      el('span', { class: `status ${job.status}`, 'data-role': 'job-status' }, job.status),
      outcomeBadge(job),
      ...jobButtons(job, title, onJob),
    ),
    el('p', { class: 'muted' }, aboutLine(job)),
    ...progressBar(job, title),
    el('p', { 'data-role': 'job-counts' }, countsLine(job)),
    rolloutLine(job),
  ];
}

/** The job as a card of the list: its name links to its page. */
function jobItem(job) {
  const title = jobTitle(job);
  return jobCard(job, title, el('h3', {}, el('a', { href: jobPath(job.jobId) }, title)));
}

export function renderJob(job) {
  const list = $('jobs');
  let item = list.querySelector(`li[data-job="${CSS.escape(job.jobId)}"]`);
  if (!item) {
    // A job not on the list joins it only if the list shows everything (then it is the newest).
    if (filtered) return;
    item = el('li', { class: 'job card', 'data-job': job.jobId });
    list.prepend(item);
  }
  item.replaceChildren(...jobItem(job).filter(Boolean));
  $('jobs-empty').hidden = list.children.length > 0;
}

/** Reads a page of the list for the filters in the form (more: the page after the last one). */
export async function loadJobs(more = false) {
  $('jobs-error').textContent = '';
  const params = formParams($('jobs-filter'), FILTERS);
  filtered = [...params.keys()].length > 0;
  params.set('limit', String(PAGE));
  if (more && next) params.set('before', next);
  let page;
  try {
    page = await api('GET', `/api/jobs?${params}`);
  } catch (error) {
    $('jobs-error').textContent = error.message.replace(/^[A-Z_]+: /, '');
    return;
  }
  if (!more) $('jobs').replaceChildren();
  for (const job of page.jobs) {
    keepNewer(state.jobs, job.jobId, job, jobRank);
    const item = el('li', { class: 'job card', 'data-job': job.jobId });
    $('jobs').append(item);
    item.replaceChildren(...jobItem(state.jobs.get(job.jobId)).filter(Boolean));
  }
  next = page.jobs.length === PAGE ? page.jobs.at(-1).jobId : undefined;
  $('jobs-more').hidden = next === undefined;
  $('jobs-empty').hidden = $('jobs').children.length > 0;
  $('jobs-empty').textContent = filtered ? 'No job matches these filters.' : 'No job yet.';
}

export async function loadJob(jobId) {
  onJob(await api('GET', `/api/jobs/${encodeURIComponent(jobId)}`));
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
  for (const key of ['target', 'script', 'scriptRef']) {
    if (summary[key] === undefined && held?.[key] !== undefined) summary[key] = held[key];
  }
  if (summary.target === undefined && !reading.has(jobId)) {
    reading.add(jobId);
    // Forgotten once settled: loaded, the job's target is known; failed, the next event retries.
    loadJob(jobId)
      .catch(showFailure)
      .finally(() => reading.delete(jobId));
  }
  keepNewer(state.jobs, jobId, summary, jobRank);
  const kept = state.jobs.get(jobId);
  for (const key of ['target', 'script', 'scriptRef']) {
    if (kept[key] === undefined && summary[key] !== undefined) kept[key] = summary[key];
  }
  if (!state.results.has(jobId)) state.results.set(jobId, new Map());
  const known = state.results.get(jobId);
  for (const r of results ?? []) keepNewer(known, deviceKey(r), r, resultRank);
  if (results) state.loaded.add(jobId);
  if (result) keepNewer(known, deviceKey(result), result, resultRank);
  renderJob(kept);
  for (const listener of followers) listener(kept, result);
}

$('jobs-filter').addEventListener('submit', (event) => {
  event.preventDefault();
  const params = formParams($('jobs-filter'), FILTERS);
  navigate(`/jobs${[...params.keys()].length > 0 ? `?${params}` : ''}`);
});
$('jobs-more').addEventListener('click', () => loadJobs(true).catch(showFailure));
onShow('jobs', (params) => {
  setTitle('Jobs');
  const elements = $('jobs-filter').elements;
  for (const name of FILTERS) elements[name].value = params[name] ?? '';
  loadJobs(false).catch(showFailure);
});
