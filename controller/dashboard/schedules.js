// The schedules page (docs/controller.md, "Schedules"): create one (a job at every match of a
// cron in the store's time zone), enable or disable it, run it now, and its next runs shown in
// the schedule's own time zone. Every text from the API goes through textContent.
import { api } from './api.js';
import { $, el } from './dom.js';
import { onShow } from './router.js';
import { showFailure } from './session.js';

const STORE_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** `iso` as the store's clock shows it: in the schedule's time zone, with the zone's name. */
function inZone(iso, timeZone) {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: '2-digit',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(new Date(iso));
}

function field(id, label, props = {}) {
  return [el('label', { for: id }, label), el('input', { id, name: id.replace('schedule-', ''), ...props })];
}

function form() {
  const node = el(
    'form',
    { id: 'schedule-form', class: 'card' },
    el(
      'div',
      { class: 'grid' },
      el(
        'div',
        { class: 'field' },
        ...field('schedule-name', 'Schedule name', {
          required: true,
          maxLength: 200,
          value: 'Nightly Z report',
        }),
        ...field('schedule-cron', 'Cron (minute hour day month weekday)', {
          required: true,
          value: '0 22 * * *',
        }),
        ...field('schedule-timezone', 'Time zone', { required: true, value: STORE_ZONE }),
      ),
      el(
        'div',
        { class: 'field' },
        ...field('schedule-group', 'Target group', { required: true, value: 'all' }),
        el('label', { for: 'schedule-script' }, 'Commands (one per line)'),
        el('textarea', { id: 'schedule-script', name: 'script', rows: 2, required: true, value: 'Z REPORT' }),
      ),
    ),
    el('p', { id: 'schedule-error', class: 'error', role: 'alert' }),
    el('button', { type: 'submit' }, 'Create schedule'),
  );
  node.addEventListener('submit', create);
  return node;
}

async function create(event) {
  event.preventDefault();
  const f = event.target.elements;
  $('schedule-error').textContent = '';
  try {
    await api('POST', '/api/schedules', {
      name: f.name.value,
      cron: f.cron.value,
      timezone: f.timezone.value,
      job: { name: f.name.value, script: f.script.value, target: { group: f.group.value } },
    });
    await loadSchedules();
  } catch (error) {
    $('schedule-error').textContent = error.message;
  }
}

async function act(method, path, body) {
  try {
    await api(method, path, body);
    await loadSchedules();
  } catch (error) {
    showFailure(error);
  }
}

function row(schedule) {
  const path = `/api/schedules/${encodeURIComponent(schedule.scheduleId)}`;
  const next = schedule.nextRuns.slice(0, 3).map((iso) => inZone(iso, schedule.timezone));
  return el(
    'li',
    { class: 'schedule card', 'data-schedule': schedule.scheduleId },
    el(
      'header',
      {},
      el('h3', {}, schedule.name),
      el(
        'span',
        { class: `status ${schedule.enabled ? 'IN_PROGRESS' : 'CANCELLED'}` },
        schedule.enabled ? 'enabled' : 'disabled',
      ),
      el(
        'button',
        {
          type: 'button',
          onclick: () => act('POST', `${path}/run`),
          'aria-label': `Run ${schedule.name} now`,
        },
        'Run now',
      ),
      el(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => act('PATCH', path, { enabled: !schedule.enabled }),
          'aria-label': `${schedule.enabled ? 'Disable' : 'Enable'} ${schedule.name}`,
        },
        schedule.enabled ? 'Disable' : 'Enable',
      ),
    ),
    el(
      'p',
      { class: 'muted' },
      `${schedule.cron} in ${schedule.timezone} · ${schedule.job.script.split('\n')[0]}`,
    ),
    el('p', { 'data-role': 'next-runs' }, next.length > 0 ? `Next runs: ${next.join('; ')}` : 'No next run'),
  );
}

export async function loadSchedules() {
  const { schedules } = await api('GET', '/api/schedules?limit=100');
  $('schedules').replaceChildren(...schedules.map(row));
  $('schedules-empty').hidden = schedules.length > 0;
  return schedules;
}

/** Builds the section once (router.js makes its empty place). */
export function setUpSchedules() {
  $('schedules-section').replaceChildren(
    el('h2', { id: 'schedules-heading', tabindex: '-1' }, 'Schedules'),
    form(),
    el('p', { id: 'schedules-empty', class: 'muted' }, 'No schedule yet.'),
    el('ol', { id: 'schedules', class: 'jobs schedules' }),
  );
}

onShow('schedules', () => loadSchedules().catch(showFailure));
