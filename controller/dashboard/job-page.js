// A job's own page (/jobs/<jobId>): progress, counts, waves, its actions, and every register's
// result with a search and a status filter; reports readable, copied or downloaded. Live through
// the event stream (jobs.js hands each change of the job here).

import { api } from './api.js';
import { $, cardTable, el, field, when } from './dom.js';
import { ended, jobCard, loadJob, onJobChange } from './jobs.js';
import { deviceKey, jobTitle, registerPath } from './names.js';
import { reportBlock } from './report.js';
import { onShow, setTitle } from './router.js';
import { showFailure } from './session.js';
import { state } from './state.js';
import { storePath } from './stores.js';

const STATUSES = ['FINISHED', 'FAILURE', 'OFFLINE', 'NO_ANSWER', 'CANCELLED', 'RUNNING', 'PENDING'];
let shownId;
let pending = false;

function isShown(jobId) {
  return shownId === jobId && !$('job-section').closest('[data-page]').hidden;
}

function summary(job) {
  const title = jobTitle(job);
  setTitle(title);
  return el(
    'div',
    { class: 'job card', 'data-job': job.jobId, 'data-role': 'job-summary' },
    ...jobCard(job, title),
    el(
      'details',
      {},
      el('summary', {}, 'Script and job id'),
      el('pre', { class: 'report' }, job.script ?? ''),
      el('p', { class: 'muted' }, `Job id ${job.jobId}`),
    ),
  );
}

// With several stores: each store's counts (GET /api/jobs/{id}?by=store), read when the page
// opens and again at most once a second while the job changes.
const BY_STORE_MS = 1000;
let byStoreTimer;
let byStoreRead = 0;

function storeCountRow(store, c) {
  return el(
    'tr',
    { 'data-store': store },
    el('th', { scope: 'row' }, el('a', { href: storePath(store) }, store)),
    el('td', { 'data-label': 'Ended' }, `${ended(c)} of ${c.total}`),
    el('td', { 'data-label': 'Finished' }, String(c.finished)),
    el('td', { 'data-label': 'Failed' }, String(c.failed)),
    el('td', { 'data-label': 'Offline' }, String(c.offline)),
    el('td', { 'data-label': 'No answer' }, String(c.noAnswer)),
    el('td', { 'data-label': 'Cancelled' }, String(c.cancelled)),
    el('td', { 'data-label': 'Running or pending' }, String(c.running + c.pending)),
  );
}

function renderByStore(countsByStore) {
  const stores = Object.keys(countsByStore ?? {});
  const part = $('job-by-store-part');
  if (!part) return;
  part.hidden = stores.length === 0;
  $('job-by-store').tBodies[0].replaceChildren(...stores.map((s) => storeCountRow(s, countsByStore[s])));
}

async function loadByStore(jobId) {
  byStoreRead = Date.now();
  const job = await api('GET', `/api/jobs/${encodeURIComponent(jobId)}?by=store`);
  if (isShown(jobId)) renderByStore(job.countsByStore);
}

function followByStore(jobId) {
  if (state.stores.length === 0 || byStoreTimer !== undefined) return;
  byStoreTimer = setTimeout(
    () => {
      byStoreTimer = undefined;
      if (isShown(jobId)) loadByStore(jobId).catch(showFailure);
    },
    Math.max(0, byStoreRead + BY_STORE_MS - Date.now()),
  );
}

function byStorePart() {
  return el(
    'div',
    { id: 'job-by-store-part', hidden: true },
    el('h3', { id: 'job-by-store-heading' }, 'Counts per store'),
    cardTable('job-by-store', 'Results of this job counted per store', [
      'Store',
      'Ended',
      'Finished',
      'Failed',
      'Offline',
      'No answer',
      'Cancelled',
      'Running or pending',
    ]),
  );
}

function resultRows(job) {
  const form = $('job-results-filter');
  const q = form.elements.q.value.trim().toLowerCase();
  const status = form.elements.status.value;
  const all = [...(state.results.get(job.jobId)?.values() ?? [])].sort((a, b) =>
    deviceKey(a).localeCompare(deviceKey(b), undefined, { numeric: true }),
  );
  const shown = all.filter(
    (r) =>
      (!status || r.status === status) &&
      (!q || `${deviceKey(r)} ${r.report ?? ''} ${r.error ?? ''}`.toLowerCase().includes(q)),
  );
  $('job-results-count').textContent = `${shown.length} of ${all.length} registers`;
  return shown.map((r) => {
    const text = r.report ?? r.error ?? '';
    const key = deviceKey(r);
    const device = state.devices.get(key) ?? r;
    return el(
      'tr',
      { 'data-device': key },
      el('th', { scope: 'row' }, el('a', { href: registerPath(device) }, key)),
      el('td', { 'data-label': 'Result' }, el('span', { class: `status ${r.status}` }, r.status)),
      el('td', { 'data-label': 'Time' }, when(r.endedAt ?? r.sentAt)),
      el(
        'td',
        { 'data-label': 'Report or error' },
        text === '' ? '' : reportBlock(text, `report of ${key}`, `${key.replace('/', '-')}-${job.jobId}.txt`),
      ),
    );
  });
}

function renderResults(job) {
  const body = $('job-results').tBodies[0];
  body.replaceChildren(...resultRows(job));
}

function render(job) {
  $('job-section').querySelector('[data-role=job-summary]').replaceWith(summary(job));
  $('job-heading').textContent = jobTitle(job);
  if (!pending) {
    // Many results end at once in a big job: one table rebuild per frame.
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const latest = state.jobs.get(shownId);
      if (latest && isShown(latest.jobId)) renderResults(latest);
    });
  }
}

function skeleton(jobId) {
  const filter = el(
    'form',
    { id: 'job-results-filter', class: 'filters', 'aria-label': 'Find results of this job' },
    field('Register or words in the report', el('input', { id: 'job-results-q', name: 'q', type: 'search' })),
    field(
      'Result',
      el(
        'select',
        { id: 'job-results-status', name: 'status' },
        el('option', { value: '' }, 'any'),
        ...STATUSES.map((s) => el('option', {}, s)),
      ),
    ),
  );
  $('job-section').replaceChildren(
    el('p', {}, el('a', { href: '/jobs' }, '← All jobs')),
    el('h2', { id: 'job-heading', tabindex: '-1' }, 'Job'),
    el('div', { 'data-role': 'job-summary' }, el('p', { class: 'muted' }, 'Loading…')),
    byStorePart(),
    el(
      'h3',
      { id: 'job-results-heading' },
      'Results per register ',
      el('span', { id: 'job-results-count', class: 'muted' }),
    ),
    filter,
    cardTable('job-results', 'Results of this job per register', [
      'Register',
      'Result',
      'Time',
      'Report or error',
    ]),
  );
  filter.addEventListener('input', () => {
    const job = state.jobs.get(jobId);
    if (job) renderResults(job);
  });
  filter.addEventListener('submit', (event) => event.preventDefault());
}

onJobChange((job) => {
  if (!isShown(job.jobId)) return;
  render(job);
  followByStore(job.jobId);
});

onShow('job', ({ jobId }) => {
  shownId = jobId;
  skeleton(jobId);
  const known = state.jobs.get(jobId);
  if (known) render(known);
  if (state.stores.length > 0) loadByStore(jobId).catch(showFailure);
  loadJob(jobId).catch((error) => {
    if (/JOB_DOES_NOT_EXIST/.test(error.message)) {
      $('job-heading').textContent = 'No such job';
      $('job-section')
        .querySelector('[data-role=job-summary]')
        .replaceChildren(el('p', { class: 'error' }, error.message));
    } else showFailure(error);
  });
});
