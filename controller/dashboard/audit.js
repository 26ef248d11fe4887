// The audit trail page (docs/controller.md, "Audit trail"): the filters of GET /api/audit
// (action, user, from, to), newest first. Every role may read it. Every text from the API goes
// through textContent (el), never innerHTML.

import { api } from './api.js';
import { $, cardTable, el, field, formParams, when } from './dom.js';
import { onShow } from './router.js';
import { showFailure } from './session.js';

/** Entries shown per search; the API has no cursor, so narrowing the time range reaches older ones. */
const SHOWN = 100;
const ACTIONS = [
  'login',
  'login_failed',
  'logout',
  'job_created',
  'job_cancelled',
  'job_aborted',
  'job_completed',
  'job_paused',
  'job_resumed',
  'job_approved',
  'job_denied',
  'schedule_created',
  'schedule_changed',
  'schedule_deleted',
  'schedule_missed',
  'script_created',
  'script_updated',
  'script_archived',
  'forbidden',
  'out_of_scope',
  'users_reloaded',
  'history_purged',
  'webhook_created',
  'webhook_deleted',
];
const FIELDS = ['action', 'user', 'from', 'to'];

function form() {
  const node = el(
    'form',
    { id: 'audit-form', class: 'card' },
    el(
      'div',
      { class: 'grid' },
      field(
        'Action',
        el(
          'select',
          { id: 'audit-action', name: 'action' },
          el('option', { value: '' }, 'any'),
          ...ACTIONS.map((action) => el('option', {}, action)),
        ),
      ),
      field('User', el('input', { id: 'audit-user', name: 'user', maxLength: 200 })),
      field('From (day or time)', el('input', { id: 'audit-from', name: 'from', placeholder: '2026-11-22' })),
      field('To (excluded)', el('input', { id: 'audit-to', name: 'to', placeholder: '2026-11-23' })),
    ),
    el('p', { id: 'audit-error', class: 'error', role: 'alert' }),
    el('button', { type: 'submit' }, 'Show entries'),
  );
  node.addEventListener('submit', (event) => {
    event.preventDefault();
    loadAudit().catch(showFailure);
  });
  return node;
}

function row(entry) {
  return el(
    'tr',
    {},
    el('td', { 'data-label': 'Time' }, when(entry.at)),
    el('td', { 'data-label': 'User' }, entry.user),
    el('td', { 'data-label': 'Address' }, entry.address),
    el('td', { 'data-label': 'Action' }, entry.action),
    el('td', { 'data-label': 'Detail' }, entry.detail),
  );
}

export async function loadAudit() {
  $('audit-error').textContent = '';
  const params = formParams($('audit-form'), FIELDS, new URLSearchParams({ limit: String(SHOWN) }));
  try {
    const { entries } = await api('GET', `/api/audit?${params}`);
    $('audit').tBodies[0].replaceChildren(...entries.map(row));
    $('audit-empty').hidden = entries.length > 0;
    $('audit-more').hidden = entries.length < SHOWN;
  } catch (error) {
    $('audit-error').textContent = error.message;
  }
}

const section = $('audit-section');
section.replaceChildren(
  el('h2', { id: 'audit-heading', tabindex: '-1' }, 'Audit trail'),
  form(),
  cardTable('audit', 'Audit entries matching the filters, newest first', [
    'Time',
    'User',
    'Address',
    'Action',
    'Detail',
  ]),
  el('p', { id: 'audit-empty', class: 'muted', hidden: true }, 'No entry matches.'),
  el(
    'p',
    { id: 'audit-more', class: 'muted', hidden: true },
    `The newest ${SHOWN} entries are shown: narrow the time range to see older ones.`,
  ),
);
// Read when the page is shown, then at each "Show entries".
onShow('audit', () => loadAudit().catch(showFailure));
