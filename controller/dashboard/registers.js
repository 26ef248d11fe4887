// The registers page: one row per register, live; search, sort and filters (connection, group,
// store, attribute) with counts. Rows are updated in place; filtering, sorting and counting
// happen at most once per frame however many registers change state.
import { $, el, when } from './dom.js';
import { deviceKey, registerPath } from './names.js';
import { onShow, setTitle } from './router.js';
import { state } from './state.js';

export function attributesText(device) {
  return Object.entries(device.attributes ?? {})
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');
}

function cell(label, ...children) {
  return el('td', { 'data-label': label }, ...children);
}

export function onlineBadge(device) {
  return el(
    'span',
    { class: `status ${device.online ? 'online' : 'offline'}` },
    device.online ? 'Online' : 'Offline',
  );
}

function cells(device) {
  return [
    el('th', { scope: 'row' }, el('a', { href: registerPath(device) }, device.deviceId)),
    cell('Status', onlineBadge(device)),
    cell(
      'Last task',
      device.lastTask
        ? el(
            'span',
            { class: device.lastTask.status, title: `task ${device.lastTask.id}` },
            device.lastTask.status,
          )
        : '—',
    ),
    cell('Last seen', when(device.lastSeenAt)),
    cell('Store', typeof device.store === 'string' ? device.store : ''),
    cell('Groups', (device.groups ?? []).join(', ')),
    cell('Attributes', attributesText(device)),
    cell('Installation', device.installation ?? ''),
    cell('Version', device.version ?? ''),
    cell('Queue', device.queue ? `${device.queue.running} running, ${device.queue.queued} queued` : '—'),
  ];
}

function filters() {
  const f = $('registers-filter').elements;
  return {
    q: f.q.value.trim().toLowerCase(),
    online: f.online.value,
    group: f.group.value,
    store: f.store.value,
    attribute: f.attribute.value.trim(),
    sort: f.sort.value,
  };
}

/** The connection filter and the attribute one (`name` or `name=value`); the store page's too. */
export function matchesState(device, f) {
  if (f.online === 'online' && !device.online) return false;
  if (f.online === 'offline' && device.online) return false;
  if (f.attribute) {
    const [name, ...value] = f.attribute.split('=');
    const have = device.attributes?.[name.trim()];
    if (have === undefined) return false;
    if (value.length > 0 && have !== value.join('=').trim()) return false;
  }
  return true;
}

function matches(device, f) {
  if (!matchesState(device, f)) return false;
  if (f.group && !(device.groups ?? []).includes(f.group)) return false;
  if (f.store && device.store !== f.store) return false;
  if (f.q) {
    const text = [
      device.deviceId,
      device.store,
      device.version,
      device.installation,
      ...(device.groups ?? []),
    ]
      .concat(Object.entries(device.attributes ?? {}).flat())
      .join(' ')
      .toLowerCase();
    if (!text.includes(f.q)) return false;
  }
  return true;
}

const SORTS = {
  id: (a, b) => a.deviceId.localeCompare(b.deviceId, undefined, { numeric: true }),
  status: (a, b) => Number(a.online) - Number(b.online) || SORTS.id(a, b),
  seen: (a, b) => (b.lastSeenAt ?? '').localeCompare(a.lastSeenAt ?? '') || SORTS.id(a, b),
  store: (a, b) => (a.store ?? '\uffff').localeCompare(b.store ?? '\uffff') || SORTS.id(a, b),
  task: (a, b) => (b.lastTask?.id ?? -1) - (a.lastTask?.id ?? -1) || SORTS.id(a, b),
};

/** The choices of a filter's select, kept to the values the registers have. */
function fillChoices(select, values) {
  const chosen = select.value;
  const wanted = ['', ...[...values].sort()];
  const have = [...select.options].map((o) => o.value);
  if (wanted.join('\n') === have.join('\n')) return;
  select.replaceChildren(...wanted.map((v) => el('option', { value: v }, v === '' ? 'any' : v)));
  select.value = wanted.includes(chosen) ? chosen : '';
}

function refresh() {
  const devices = [...state.devices.values()];
  fillChoices($('registers-group'), new Set(devices.flatMap((d) => d.groups ?? [])));
  fillChoices(
    $('registers-store'),
    new Set(devices.map((d) => d.store).filter((s) => typeof s === 'string' && s !== '')),
  );
  const f = filters();
  const shown = devices.filter((d) => matches(d, f)).sort(SORTS[f.sort] ?? SORTS.id);
  const body = $('registers').tBodies[0];
  const rows = new Map([...body.rows].map((r) => [r.dataset.device, r]));
  const order = shown.map((d) => rows.get(deviceKey(d))).filter(Boolean);
  const visible = new Set(shown.map(deviceKey));
  for (const [id, row] of rows) row.hidden = !visible.has(id);
  // Re-append only when the order changed, so a state change moves nothing on screen.
  const now = [...body.rows].filter((r) => !r.hidden);
  if (now.length !== order.length || now.some((r, i) => r !== order[i])) body.append(...order);
  const online = devices.filter((d) => d.online).length;
  const count = `${online} of ${devices.length} online`;
  $('registers-count').textContent =
    shown.length === devices.length ? `(${count})` : `(${shown.length} shown · ${count})`;
  $('registers-empty').hidden = devices.length > 0;
  $('registers-none').hidden = devices.length === 0 || shown.length > 0;
}

/** Registers changed since the last frame: a burst of events costs one update per register. */
const changed = new Map();
let pending = false;

function drawRow(device) {
  const body = $('registers').tBodies[0];
  let row = body.querySelector(`tr[data-device="${CSS.escape(deviceKey(device))}"]`);
  if (!row) {
    row = el('tr', { 'data-device': deviceKey(device) });
    body.append(row);
  }
  row.replaceChildren(...cells(device));
}

function flush() {
  pending = false;
  for (const device of changed.values()) drawRow(device);
  changed.clear();
  refresh();
}

export function renderDevice(device) {
  changed.set(deviceKey(device), device);
  if (pending) return;
  pending = true;
  requestAnimationFrame(flush);
}

export function renderDevices(devices) {
  $('registers').tBodies[0].replaceChildren();
  changed.clear();
  for (const device of devices) drawRow(device);
  refresh();
}

$('registers-filter').addEventListener('input', refresh);
$('registers-filter').addEventListener('submit', (event) => event.preventDefault());
onShow('registers', () => {
  setTitle('Registers');
  refresh();
});
