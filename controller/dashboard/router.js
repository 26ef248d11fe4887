// The dashboard's pages and their addresses (docs/dashboard.md, "Pages"): one document, each page
// a URL kept with the history API, so the back button, a reload and a shared link open the same
// page (the service answers index.html at every page's path). Nothing reloads the document.
import { $, el } from './dom.js';

const NAMES = {
  registers: 'Registers',
  register: 'Register',
  stores: 'Stores',
  store: 'Store',
  jobs: 'Jobs',
  job: 'Job',
  'new-job': 'Start a job',
  scripts: 'Scripts',
  schedules: 'Schedules',
  results: 'Results',
  audit: 'Audit',
  webhooks: 'Webhooks',
};
// Pages their module draws whole start as an empty section, labelled by the heading it will get.
for (const page of ['stores', 'store', 'register', 'job', 'schedules', 'audit']) {
  const section = el('section', { id: `${page}-section`, 'aria-labelledby': `${page}-heading` });
  $('app-view').append(el('div', { class: 'page', 'data-page': page, hidden: true }, section));
}
/** Page name -> what to do when it is shown, with the route's parameters. */
const shown = new Map();
let current;

/** `/jobs/<id>` -> { page: 'job', params: { jobId } }; unknown paths show the registers. */
export function parse(pathname, search = '') {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(search);
  const [first, ...rest] = parts;
  if (first === 'registers' && rest.length === 1) return { page: 'register', params: { deviceId: rest[0] } };
  if (first === 'registers' && rest.length === 2)
    return { page: 'register', params: { store: rest[0], deviceId: rest[1] } };
  if (first === 'stores' && rest.length === 1) return { page: 'store', params: { store: rest[0] } };
  if (first === 'jobs' && rest[0] === 'new') return { page: 'new-job', params: Object.fromEntries(query) };
  if (first === 'jobs' && rest.length === 1) return { page: 'job', params: { jobId: rest[0] } };
  if (first && NAMES[first] && rest.length === 0) return { page: first, params: Object.fromEntries(query) };
  return { page: 'registers', params: {} };
}

export function onShow(page, action) {
  shown.set(page, action);
}

export function currentPage() {
  return current;
}

export function setTitle(text) {
  document.title = `${text} · regbridge store controller`;
}

function show({ page, params }, focus) {
  current = { page, params };
  for (const node of document.querySelectorAll('[data-page]')) node.hidden = node.dataset.page !== page;
  const section =
    page === 'register'
      ? 'registers'
      : page === 'store'
        ? 'stores'
        : page === 'job' || page === 'new-job'
          ? 'jobs'
          : page;
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  setTitle(NAMES[page]);
  shown.get(page)?.(params);
  // A person using a screen reader or the keyboard lands on the new page's heading.
  if (focus) document.querySelector(`[data-page="${page}"] h2`)?.focus({ preventScroll: false });
}

/** Shows the page of `path` and adds it to the history (a link, a button, a started job). */
export function navigate(path, { replace = false } = {}) {
  const url = new URL(path, location.href);
  if (url.pathname + url.search !== location.pathname + location.search) {
    if (replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
  }
  show(parse(url.pathname, url.search), true);
}

/** Shows the page of the current address (after a login, a reload or a shared link). */
export function showCurrent() {
  show(parse(location.pathname, location.search), false);
}

// Same-origin links to a page are followed in place; a modified click (new tab) or a download is not.
document.addEventListener('click', (event) => {
  const link = event.target.closest?.('a[href]');
  if (!link || link.target || link.hasAttribute('download')) return;
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
    return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api') || url.pathname.startsWith('/docs'))
    return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', () => {
  if (!$('app-view').hidden) show(parse(location.pathname, location.search), true);
});
