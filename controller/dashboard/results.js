// The results page of the dashboard (docs/dashboard.md; docs/controller.md, "Search and export"): the filters of
// GET /api/results, pages through its `next` cursor, and "Download CSV" of the whole search
// (fetched with the session's token, then saved from a blob: a plain link would carry no token).

import { api } from './api.js';
import { $, el, formParams, saveFile, when } from './dom.js';
import { jobPath } from './names.js';
import { navigate, onShow } from './router.js';
import { showFailure } from './session.js';
import { state } from './state.js';

const FIELDS = ['deviceId', 'status', 'jobId', 'from', 'to', 'q'];
let next;

function row(result) {
  const outcome = result.report ?? result.error ?? '';
  return el(
    'tr',
    {},
    el(
      'td',
      { 'data-label': 'Job' },
      el('a', { href: jobPath(result.jobId) }, result.jobName ?? result.jobId),
    ),
    el('td', { 'data-label': 'Register' }, result.deviceId),
    el(
      'td',
      { 'data-label': 'Status' },
      el('span', { class: `badge status ${result.status} ${result.status.toLowerCase()}` }, result.status),
    ),
    el('td', { 'data-label': 'Ended' }, when(result.endedAt ?? result.sentAt)),
    el('td', { 'data-label': 'Report or error' }, el('pre', { class: 'report' }, outcome)),
  );
}

async function search(more) {
  $('results-error').textContent = '';
  const params = formParams($('results-form'), FIELDS);
  if (more && next) params.set('before', next);
  try {
    const page = await api('GET', `/api/results?${params}`);
    const body = $('results').tBodies[0];
    if (!more) body.replaceChildren();
    for (const result of page.results) body.append(row(result));
    next = page.next;
    $('results-more').hidden = next === undefined;
    $('results-empty').hidden = body.rows.length > 0;
  } catch (error) {
    $('results-error').textContent = error.message;
  }
}

async function download() {
  $('results-error').textContent = '';
  try {
    const response = await fetch(`/api/results?${formParams($('results-form'), FIELDS)}`, {
      headers: { accept: 'text/csv', authorization: `Bearer ${state.token}` },
    });
    if (!response.ok) throw new Error((await response.json()).message ?? `HTTP ${response.status}`);
    saveFile(await response.blob(), 'results.csv');
  } catch (error) {
    $('results-error').textContent = error.message;
  }
}

// The filters live in the address (/results?deviceId=reg7&status=FAILURE): a search can be shared.
$('results-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const params = formParams($('results-form'), FIELDS);
  navigate(`/results${[...params.keys()].length > 0 ? `?${params}` : ''}`);
});
onShow('results', (params) => {
  const form = $('results-form');
  for (const name of FIELDS) form.elements[name].value = params[name] ?? '';
  if (Object.keys(params).some((name) => FIELDS.includes(name))) search(false).catch(showFailure);
});
$('results-more').addEventListener('click', () => search(true).catch(showFailure));
$('results-csv').addEventListener('click', () => download());
