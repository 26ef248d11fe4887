// A register's own page (/registers/<id>, or /registers/<store>/<id>): its state and attributes,
// live, its recent results with their reports (GET /api/results?deviceId=), and "Run a script on
// this register", which opens the job form aimed at it.
import { api } from './api.js';
import { $, el, when } from './dom.js';
import { loadJob } from './jobs.js';
import { deviceKey, jobPath, jobTitle } from './names.js';
import { reportBlock } from './report.js';
import { onShow, setTitle } from './router.js';
import { showFailure } from './session.js';
import { may, state } from './state.js';
import { storePath } from './stores.js';

const RECENT = 20;
/** The register shown: its key, id and store. */
let shown;

function facts(device) {
  const rows = [
    ['Status', device.online ? 'Online' : 'Offline'],
    [
      'Store',
      typeof device.store === 'string' && device.store !== ''
        ? el('a', { href: storePath(device.store) }, device.store)
        : undefined,
    ],
    ['Groups', (device.groups ?? []).join(', ') || undefined],
    ['Last task', device.lastTask ? `${device.lastTask.status} (task ${device.lastTask.id})` : undefined],
    ['Last seen', when(device.lastSeenAt)],
    ['Queue', device.queue ? `${device.queue.running} running, ${device.queue.queued} queued` : undefined],
    ['Installation', device.installation],
    ['Version', device.version],
    // Attributes (serve --attribute) under their own names, marked as such.
    ...Object.entries(device.attributes ?? {}).map(([name, value]) => [`Attribute ${name}`, value]),
  ].filter(([, value]) => value !== undefined && value !== '');
  return el(
    'dl',
    { class: 'facts card', 'data-role': 'register-facts' },
    ...rows.flatMap(([name, value]) => [
      el('dt', {}, name),
      el('dd', name === 'Status' ? { class: `status ${device.online ? 'online' : 'offline'}` } : {}, value),
    ]),
  );
}

/** The job's name, or for a job without one its script and target once the job is known. */
function nameOf(result) {
  if (result.jobName) return result.jobName;
  const job = state.jobs.get(result.jobId);
  return job?.target ? jobTitle(job) : 'Job';
}

function resultItem(result) {
  const text = result.report ?? result.error ?? '';
  return el(
    'li',
    { class: 'card result' },
    el(
      'p',
      {},
      el('a', { href: jobPath(result.jobId), 'data-job': result.jobId }, nameOf(result)),
      ' · ',
      el('span', { class: `status ${result.status}` }, result.status),
      ' · ',
      when(result.endedAt ?? result.sentAt),
    ),
    text === ''
      ? el('p', { class: 'muted' }, 'No report.')
      : reportBlock(text, `report of ${result.deviceId}`, `${result.deviceId}-${result.jobId}.txt`),
  );
}

function render({ key, deviceId, store }) {
  const device = state.devices.get(key);
  const section = $('register-section');
  const run = el(
    'a',
    { href: `/jobs/new?devices=${encodeURIComponent(key)}`, class: 'button' },
    'Run a script on this register',
  );
  section.replaceChildren(
    el('p', {}, el('a', { href: '/registers' }, '← All registers')),
    el(
      'h2',
      { id: 'register-heading', tabindex: '-1' },
      `Register ${deviceId}${store ? ` (store ${store})` : ''}`,
    ),
    device ? facts(device) : el('p', { class: 'muted' }, 'This controller has not seen this register.'),
    may('operate') ? el('p', {}, run) : null,
    el('h3', { id: 'register-results-heading' }, 'Recent results'),
    el(
      'p',
      {},
      el('a', { href: `/results?${new URLSearchParams({ deviceId })}` }, `Search all results of ${deviceId}`),
    ),
    el('ol', { id: 'register-results', class: 'jobs', 'aria-labelledby': 'register-results-heading' }),
    el('p', { id: 'register-results-empty', class: 'muted', hidden: true }, 'No result yet.'),
  );
}

async function loadResults({ key, deviceId, store }) {
  const params = new URLSearchParams({ deviceId, ...(store && { store }), limit: String(RECENT) });
  const { results } = await api('GET', `/api/results?${params}`);
  if (shown?.key !== key) return;
  $('register-results').replaceChildren(...results.map(resultItem));
  $('register-results-empty').hidden = results.length > 0;
  // Jobs without a name are called after their script and target: read the ones not known yet.
  const unknown = [
    ...new Set(results.filter((r) => !r.jobName && !state.jobs.get(r.jobId)?.target).map((r) => r.jobId)),
  ];
  await Promise.all(unknown.map((jobId) => loadJob(jobId).catch(() => {})));
  if (shown?.key !== key) return;
  for (const link of $('register-results').querySelectorAll('a[data-job]')) {
    const job = state.jobs.get(link.dataset.job);
    if (job?.target && link.textContent === 'Job') link.textContent = jobTitle(job);
  }
}

function onPage() {
  return !$('register-section').closest('[data-page]').hidden;
}

/** A state change of the register shown (event stream) updates its facts in place. */
export function onDeviceChange(device) {
  if (shown?.key !== deviceKey(device) || !onPage()) return;
  $('register-section').querySelector('[data-role=register-facts]')?.replaceWith(facts(device));
}

/** A result of the register shown ended (its key): the list is read again. */
export function onResultOf(key) {
  if (shown?.key === key && onPage()) loadResults(shown).catch(showFailure);
}

onShow('register', ({ deviceId, store }) => {
  shown = { key: store ? `${store}/${deviceId}` : deviceId, deviceId, store };
  setTitle(`Register ${deviceId}`);
  render(shown);
  loadResults(shown).catch(showFailure);
});
