// One store's page (/stores/<store>): its state (registers, online, last seen, link, silent) and
// its registers, live from the event stream, with a search, the connection and an attribute
// filter and counts; each register links to its page. "Start a job on this store" opens the job
// form aimed at the store.
import { $, cardTable, el, field, when } from './dom.js';
import { registerPath } from './names.js';
import { attributesText, matchesState, onlineBadge } from './registers.js';
import { onShow, setTitle } from './router.js';
import { may, state } from './state.js';
import { followStores, onStores, storeState } from './stores.js';

let shown;
let pending = false;

function onPage() {
  return shown !== undefined && !$('store-section').closest('[data-page]').hidden;
}

function summary() {
  const store = state.stores.find((s) => s.store === shown);
  if (!store)
    return el(
      'p',
      { class: 'muted', 'data-role': 'store-summary' },
      'This controller has not heard of this store.',
    );
  const facts = [
    ['State', storeState(store)],
    ['Registers', String(store.devices)],
    ['Online', String(store.online)],
    ['Last seen', when(store.lastSeenAt) || 'never'],
    ['Link', store.link ?? 'not heard'],
  ];
  return el(
    'dl',
    { class: 'facts card', 'data-role': 'store-summary' },
    ...facts.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]),
  );
}

function matches(device, f) {
  if (!matchesState(device, f)) return false;
  if (f.q) {
    const text = [device.deviceId, device.version, ...(device.groups ?? []), attributesText(device)];
    if (!text.join(' ').toLowerCase().includes(f.q)) return false;
  }
  return true;
}

function row(device) {
  return el(
    'tr',
    { 'data-device': device.deviceId },
    el('th', { scope: 'row' }, el('a', { href: registerPath(device) }, device.deviceId)),
    el('td', { 'data-label': 'Status' }, onlineBadge(device)),
    el('td', { 'data-label': 'Last seen' }, when(device.lastSeenAt)),
    el('td', { 'data-label': 'Attributes' }, attributesText(device)),
    el('td', { 'data-label': 'Groups' }, (device.groups ?? []).join(', ')),
  );
}

function redraw() {
  pending = false;
  if (!onPage()) return;
  $('store-section').querySelector('[data-role=store-summary]').replaceWith(summary());
  const form = $('store-filter').elements;
  const f = {
    q: form.q.value.trim().toLowerCase(),
    online: form.online.value,
    attribute: form.attribute.value.trim(),
  };
  const all = [...state.devices.values()]
    .filter((d) => d.store === shown)
    .sort((a, b) => a.deviceId.localeCompare(b.deviceId, undefined, { numeric: true }));
  const rows = all.filter((d) => matches(d, f));
  $('store-registers').tBodies[0].replaceChildren(...rows.map(row));
  const online = all.filter((d) => d.online).length;
  const count = `${online} of ${all.length} online`;
  $('store-count').textContent =
    rows.length === all.length ? `(${count})` : `(${rows.length} shown · ${count})`;
  $('store-none').hidden = rows.length > 0;
}

/** A register changed: the page is drawn again once per frame. */
export function onStoreRegisterChange(device) {
  if (device.store !== shown || !onPage() || pending) return;
  pending = true;
  requestAnimationFrame(redraw);
}

function skeleton(store) {
  const filter = el(
    'form',
    { id: 'store-filter', class: 'card filters', 'aria-label': `Find registers of store ${store}` },
    field(
      'Search',
      el('input', { id: 'store-q', name: 'q', type: 'search', placeholder: 'register, group, version' }),
    ),
    field(
      'Connection',
      el(
        'select',
        { id: 'store-online', name: 'online' },
        ...['', 'online', 'offline'].map((v) => el('option', { value: v }, v || 'any')),
      ),
    ),
    field(
      'Attribute (name=value)',
      el('input', { id: 'store-attribute', name: 'attribute', placeholder: 'region=north' }),
    ),
  );
  filter.addEventListener('input', redraw);
  filter.addEventListener('submit', (event) => event.preventDefault());
  const run = el(
    'a',
    { href: `/jobs/new?${new URLSearchParams({ stores: store })}`, class: 'button' },
    'Start a job on this store',
  );
  $('store-section').replaceChildren(
    el('p', {}, el('a', { href: '/stores' }, '← All stores')),
    el('h2', { id: 'store-heading', tabindex: '-1' }, `Store ${store}`),
    el('div', { 'data-role': 'store-summary' }),
    may('operate') ? el('p', {}, run) : null,
    el(
      'h3',
      { id: 'store-registers-heading' },
      'Registers ',
      el('span', { id: 'store-count', class: 'muted' }),
    ),
    filter,
    cardTable('store-registers', `Registers of store ${store}, live`, [
      'Register',
      'Status',
      'Last seen',
      'Attributes',
      'Groups',
    ]),
    el('p', { id: 'store-none', class: 'muted', hidden: true }, 'No register of this store matches.'),
  );
}

onStores(() => {
  if (onPage()) redraw();
});

onShow('store', ({ store }) => {
  shown = store;
  setTitle(`Store ${store}`);
  skeleton(store);
  redraw();
  followStores();
});
