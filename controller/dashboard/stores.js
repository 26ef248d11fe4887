// The Stores page (/stores) of a multi-store controller: each store's registers, how many are
// online, its link and a "Silent" marker. GET /api/stores is read on open, at most every 2 s
// while register events arrive, and every 15 s for link states, never while hidden
// (docs/decisions/dashboard-stores.md).
import { api } from './api.js';
import { $, cardTable, el, when } from './dom.js';
import { currentPage, onShow, setTitle } from './router.js';
import { showFailure } from './session.js';
import { state } from './state.js';

const EVENT_REFRESH_MS = 2000;
const LINK_REFRESH_MS = 15_000;
/** Called after each reading of the stores (the store page redraws its summary). */
const followers = [];
let timer;
let linkTimer;
let lastRead = 0;

export function onStores(listener) {
  followers.push(listener);
}

function storePageShown() {
  const page = currentPage()?.page;
  return !$('app-view').hidden && (page === 'stores' || page === 'store');
}

/** Reads GET /api/stores; the navigation offers Stores once the controller serves several. */
export async function loadStores() {
  lastRead = Date.now();
  const { stores } = await api('GET', '/api/stores');
  state.stores = stores;
  $('nav-stores').hidden = stores.length === 0;
  if (currentPage()?.page === 'stores') render();
  for (const listener of followers) listener(stores);
}

/** A register changed (event stream): the stores are read again, at most every 2 s. */
export function onStoreDeviceChange() {
  if (!storePageShown() || timer !== undefined) return;
  timer = setTimeout(
    () => {
      timer = undefined;
      if (storePageShown()) loadStores().catch(showFailure);
    },
    Math.max(0, lastRead + EVENT_REFRESH_MS - Date.now()),
  );
}

function followLinks() {
  clearInterval(linkTimer);
  linkTimer = setInterval(() => {
    if (storePageShown()) loadStores().catch(showFailure);
    else {
      clearInterval(linkTimer);
      linkTimer = undefined;
    }
  }, LINK_REFRESH_MS);
}

/** The store's state in words and style, never colour alone. */
export function storeState(store) {
  if (!store.silent) return el('span', { class: 'store-state reporting' }, 'Reporting');
  const why = store.link === 'down' ? 'link down' : 'no register online';
  return el('span', { class: 'store-state silent', 'data-role': 'silent' }, `⚠ Silent: ${why}`);
}

export function storePath(store) {
  return `/stores/${encodeURIComponent(store)}`;
}

function linkWords(store) {
  return store.link === undefined ? 'not heard' : store.link;
}

function row(store) {
  return el(
    'tr',
    { 'data-store': store.store, class: store.silent ? 'silent-row' : undefined },
    el('th', { scope: 'row' }, el('a', { href: storePath(store.store) }, store.store)),
    el('td', { 'data-label': 'State' }, storeState(store)),
    el('td', { 'data-label': 'Registers' }, String(store.devices)),
    el('td', { 'data-label': 'Online' }, String(store.online)),
    el('td', { 'data-label': 'Last seen' }, when(store.lastSeenAt)),
    el('td', { 'data-label': 'Link' }, linkWords(store)),
  );
}

function skeleton() {
  $('stores-section').replaceChildren(
    el(
      'h2',
      { id: 'stores-heading', tabindex: '-1' },
      'Stores ',
      el('span', { id: 'stores-count', class: 'muted' }),
    ),
    el(
      'p',
      { class: 'muted' },
      'A store is silent when none of its registers is online or its link to the head office is down.',
    ),
    cardTable('stores', 'Every store this controller serves, silent ones marked', [
      'Store',
      'State',
      'Registers',
      'Online',
      'Last seen',
      'Link',
    ]),
    el('p', { id: 'stores-empty', class: 'muted', hidden: true }, 'This controller serves one store.'),
  );
}

function render() {
  if (!$('stores')) skeleton();
  const stores = state.stores;
  const silent = stores.filter((s) => s.silent).length;
  $('stores-count').textContent =
    `(${stores.length} ${stores.length === 1 ? 'store' : 'stores'} · ${silent} silent)`;
  $('stores').tBodies[0].replaceChildren(...stores.map(row));
  $('stores-empty').hidden = stores.length > 0;
}

onShow('stores', () => {
  setTitle('Stores');
  render();
  followStores();
});

/** A store page opened: the stores are read now and followed while it is shown. */
export function followStores() {
  loadStores().catch(showFailure);
  followLinks();
}
