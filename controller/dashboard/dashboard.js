// The store controller's dashboard (docs/controller.md, "Dashboard"): plain browser modules, no
// build step and no CDN, so it works offline in a store. State comes from the HTTP API once
// (GET /api/devices, GET /api/jobs) and then only from the event stream (GET /api/events): no
// polling. Every text from the API goes through textContent, never innerHTML.

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'regbridge.token';
const JOB_DETAILS_LOADED = 10;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  devices: new Map(),
  jobs: new Map(),
  results: new Map(),
  /** Jobs whose full result list was read (the table shows results only then). */
  loaded: new Set(),
  events: null,
};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

class Unauthorized extends Error {}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: {
      ...(state.token && { authorization: `Bearer ${state.token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const data = response.headers.get('content-type')?.includes('json') ? await response.json() : undefined;
  if (response.status === 401 && path !== '/api/authenticate') throw new Unauthorized();
  if (!response.ok)
    throw new Error(data?.message ? `${data.code}: ${data.message}` : `HTTP ${response.status}`);
  return data;
}

function setConnection(text) {
  $('connection').textContent = text;
}

// ---- registers ----

function renderDevice(device) {
  const rows = $('registers').tBodies[0];
  let row = rows.querySelector(`tr[data-device="${CSS.escape(device.deviceId)}"]`);
  const cells = [
    el('th', { scope: 'row' }, device.deviceId),
    el(
      'td',
      {},
      el(
        'span',
        { class: `status ${device.online ? 'online' : 'offline'}` },
        device.online ? 'Online' : 'Offline',
      ),
    ),
    el('td', {}, (device.groups ?? []).join(', ')),
    el('td', {}, device.installation ?? ''),
    el('td', {}, device.version ?? ''),
    el(
      'td',
      {},
      device.lastTask
        ? el('span', { class: device.lastTask.status }, `#${device.lastTask.id} ${device.lastTask.status}`)
        : '—',
    ),
    el('td', {}, device.queue ? `${device.queue.running} running, ${device.queue.queued} queued` : '—'),
    el('td', {}, when(device.lastSeenAt)),
  ];
  if (!row) {
    row = el('tr', { 'data-device': device.deviceId });
    const after = [...rows.rows].find((r) => r.dataset.device > device.deviceId);
    rows.insertBefore(row, after ?? null);
  }
  row.replaceChildren(...cells);
  const online = [...state.devices.values()].filter((d) => d.online).length;
  $('registers-count').textContent = `(${online} of ${state.devices.size} online)`;
  $('registers-empty').hidden = state.devices.size > 0;
}

// ---- jobs ----

function ended(counts) {
  return counts.total - counts.pending - counts.running;
}

function resultsTable(jobId) {
  const results = state.results.get(jobId);
  if (!results || !state.loaded.has(jobId))
    return el('p', { class: 'muted' }, 'Open to load the results of each register.');
  const body = el('tbody');
  for (const r of [...results.values()].sort((a, b) => a.deviceId.localeCompare(b.deviceId))) {
    body.append(
      el(
        'tr',
        {},
        el('th', { scope: 'row' }, r.deviceId),
        el('td', {}, el('span', { class: `status ${r.status}` }, r.status)),
        el('td', {}, r.taskId === undefined ? '' : String(r.taskId)),
        el('td', {}, r.report !== undefined ? el('pre', {}, r.report) : (r.error ?? '')),
        el('td', {}, when(r.endedAt ?? r.sentAt)),
      ),
    );
  }
  const head = el(
    'thead',
    {},
    el(
      'tr',
      {},
      ...['Register', 'Result', 'Task', 'Report or error', 'Time'].map((h) => el('th', { scope: 'col' }, h)),
    ),
  );
  return el(
    'div',
    { class: 'table-wrap' },
    el('table', {}, el('caption', { class: 'visually-hidden' }, `Results of job ${jobId}`), head, body),
  );
}

function renderJob(job) {
  const list = $('jobs');
  let item = list.querySelector(`li[data-job="${CSS.escape(job.jobId)}"]`);
  const title = job.name ? `${job.name} (${job.jobId})` : job.jobId;
  const done = ended(job.counts);
  const c = job.counts;
  const summary = `${done} of ${c.total} ended: ${c.finished} finished, ${c.failed} failed, ${c.offline} offline, ${c.noAnswer} no answer, ${c.cancelled} cancelled; ${c.running} running, ${c.pending} pending`;
  const progressId = `progress-${job.jobId}`;
  const open = item?.querySelector('details')?.open ?? false;
  const details = el('details', { open }, el('summary', {}, 'Results per register'), resultsTable(job.jobId));
  details.addEventListener('toggle', () => {
    if (details.open && !state.loaded.has(job.jobId)) loadJob(job.jobId).catch(showFailure);
  });
  const target =
    job.target.group !== undefined
      ? `group ${job.target.group}`
      : `registers ${job.target.devices.join(', ')}`;
  const cancel =
    job.status === 'IN_PROGRESS'
      ? el(
          'button',
          {
            type: 'button',
            class: 'danger',
            onclick: () => cancelJob(job.jobId),
            'aria-label': `Cancel job ${title}`,
          },
          'Cancel',
        )
      : undefined;
  const content = [
    el(
      'header',
      {},
      el('h3', {}, title),
      el('span', { class: `status ${job.status}`, 'data-role': 'job-status' }, job.status),
      cancel,
    ),
    el(
      'p',
      { class: 'muted' },
      `${target} · by ${job.createdBy} · ${when(job.createdAt)}${job.endedAt ? ` · ended ${when(job.endedAt)}` : ''}`,
    ),
    el('label', { for: progressId, class: 'visually-hidden' }, `Progress of job ${title}`),
    el('progress', { id: progressId, max: Math.max(c.total, 1), value: done }),
    el('p', { 'data-role': 'job-counts' }, summary),
    details,
  ];
  if (!item) {
    item = el('li', { class: 'job card', 'data-job': job.jobId });
    list.prepend(item);
  }
  item.replaceChildren(...content);
  $('jobs-empty').hidden = state.jobs.size > 0;
}

async function loadJob(jobId) {
  onJob(await api('GET', `/api/jobs/${encodeURIComponent(jobId)}`));
}

async function cancelJob(jobId) {
  try {
    const job = await api('POST', `/api/jobs/${encodeURIComponent(jobId)}/cancel`);
    onJob(job);
  } catch (error) {
    showFailure(error);
  }
}

// An answer (POST /api/jobs, GET /api/jobs/{id}) can reach the page after the events that
// followed it: a job to a few registers ends within milliseconds. So whatever arrives, the more
// advanced state is kept, never a stale one over a newer one.

/** Higher is later: an ended job, then more results ended, then more running. */
function jobRank(job) {
  return (job.endedAt ? 1 : 0) * 1e9 + ended(job.counts) * (job.counts.total + 1) + job.counts.running;
}

function resultRank(result) {
  return result.status === 'PENDING' ? 0 : result.status === 'RUNNING' ? 1 : 2;
}

function keepNewer(map, key, value, rank) {
  const held = map.get(key);
  if (!held || rank(value) >= rank(held)) map.set(key, value);
}

function onJob(data) {
  const { result, results, ...summary } = data;
  const { jobId } = summary;
  keepNewer(state.jobs, jobId, summary, jobRank);
  if (!state.results.has(jobId)) state.results.set(jobId, new Map());
  const known = state.results.get(jobId);
  for (const r of results ?? []) keepNewer(known, r.deviceId, r, resultRank);
  if (results) state.loaded.add(jobId);
  if (result) keepNewer(known, result.deviceId, result, resultRank);
  renderJob(state.jobs.get(jobId));
}

// ---- the job form ----

function numberField(form, name) {
  const raw = form.elements[name].value.trim();
  return raw === '' ? undefined : Number(raw);
}

async function startJob(event) {
  event.preventDefault();
  const form = event.target;
  $('job-error').textContent = '';
  const targetText = form.elements.target.value.trim();
  const target =
    form.elements.targetKind.value === 'group'
      ? { group: targetText }
      : {
          devices: targetText
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        };
  const batchSize = numberField(form, 'batchSize');
  const maxPerMinute = numberField(form, 'maxPerMinute');
  const failureRatio = numberField(form, 'failureRatio');
  const deadlineSeconds = numberField(form, 'deadlineSeconds');
  const body = {
    script: form.elements.script.value,
    target,
    ...(form.elements.name.value.trim() && { name: form.elements.name.value.trim() }),
    ...((batchSize !== undefined || maxPerMinute !== undefined) && {
      rollout: {
        ...(batchSize !== undefined && { batchSize }),
        ...(maxPerMinute !== undefined && { maxPerMinute }),
      },
    }),
    ...(failureRatio !== undefined && { abort: { failureRatio } }),
    ...(deadlineSeconds !== undefined && { deadlineMs: Math.round(deadlineSeconds * 1000) }),
  };
  const button = form.querySelector('button[type=submit]');
  button.disabled = true;
  try {
    onJob(await api('POST', '/api/jobs', body));
  } catch (error) {
    if (error instanceof Unauthorized) return loggedOut();
    $('job-error').textContent = error.message;
  } finally {
    button.disabled = false;
  }
}

// ---- login, live stream ----

function showFailure(error) {
  if (error instanceof Unauthorized) return loggedOut();
  setConnection(`Error: ${error.message}`);
}

function loggedOut(message = 'Your session ended: log in again.') {
  state.events?.close();
  state.events = null;
  state.token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  $('app-view').hidden = true;
  $('logout').hidden = true;
  $('login-view').hidden = false;
  $('login-error').textContent = message;
  setConnection('Not logged in');
  $('login-user').focus();
}

async function loadAll() {
  const [{ devices }, { jobs }] = await Promise.all([
    api('GET', '/api/devices'),
    api('GET', '/api/jobs?limit=50'),
  ]);
  state.devices = new Map(devices.map((d) => [d.deviceId, d]));
  $('registers').tBodies[0].replaceChildren();
  for (const device of devices) renderDevice(device);
  $('jobs').replaceChildren();
  const held = state.jobs;
  state.jobs = new Map();
  for (const job of [...jobs].reverse()) {
    state.jobs.set(job.jobId, job);
    // An event heard while this list was on its way may be newer than the list.
    if (held.has(job.jobId)) keepNewer(state.jobs, job.jobId, held.get(job.jobId), jobRank);
    renderJob(state.jobs.get(job.jobId));
  }
  $('jobs-empty').hidden = jobs.length > 0;
  await Promise.all(jobs.slice(0, JOB_DETAILS_LOADED).map((job) => loadJob(job.jobId)));
}

function connectEvents() {
  const events = new EventSource(`/api/events?access_token=${encodeURIComponent(state.token)}`);
  state.events = events;
  // Every (re)connection reloads the lists, so nothing that happened while disconnected is missed.
  events.onopen = () => {
    setConnection('Live');
    loadAll().catch(showFailure);
  };
  events.onerror = () => {
    setConnection('Reconnecting…');
    // A refused token closes the stream for good (no retry): check whether the session ended.
    if (events.readyState === EventSource.CLOSED)
      api('GET', '/api/devices').then(() => setTimeout(connectEvents, 2000), showFailure);
  };
  events.addEventListener('device', (message) => {
    const device = JSON.parse(message.data);
    state.devices.set(device.deviceId, device);
    renderDevice(device);
  });
  events.addEventListener('job', (message) => onJob(JSON.parse(message.data)));
}

function loggedIn() {
  $('login-view').hidden = true;
  $('app-view').hidden = false;
  $('logout').hidden = false;
  setConnection('Connecting…');
  connectEvents();
}

async function login(event) {
  event.preventDefault();
  $('login-error').textContent = '';
  const form = event.target;
  try {
    const { token } = await api('POST', '/api/authenticate', {
      userName: form.elements.userName.value,
      password: form.elements.password.value,
    });
    state.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
    form.elements.password.value = '';
    loggedIn();
  } catch (error) {
    $('login-error').textContent = error.message;
  }
}

$('login-form').addEventListener('submit', login);
$('job-form').addEventListener('submit', startJob);
$('logout').addEventListener('click', () => loggedOut('Logged out.'));
if (state.token) loggedIn();
else $('login-user').focus();
