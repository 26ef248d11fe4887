// The store controller's dashboard (docs/dashboard.md): plain browser modules, no build step and
// no CDN, so it works offline in a store (docs/decisions/dashboard-plain-modules.md). Each page
// has its own address (router.js). State comes from the HTTP API once per connection and then
// only from the event stream (GET /api/events): no polling. Every text from the API goes through
// textContent, never innerHTML.

import { api } from './api.js';
import './audit.js';
import { $, setStoreZone } from './dom.js';
import './job-form.js';
import './job-page.js';
import { onJob } from './jobs.js';
import { deviceKey } from './names.js';
import { onDeviceChange, onResultOf } from './register-page.js';
import { renderDevice, renderDevices } from './registers.js';
import './results.js';
import { showCurrent } from './router.js';
import { loadSchedules, setUpSchedules } from './schedules.js';
import { loadScriptHelp } from './script-help.js';
import { logOut, setConnection, showFailure } from './session.js';
import { offerSignOn, takeSignOn } from './sign-on.js';
import { may, state, TOKEN_KEY } from './state.js';
import { onStoreRegisterChange } from './store-page.js';
import { loadStores, onStoreDeviceChange } from './stores.js';
import { loadWebhooks } from './webhooks.js';

const RECONNECT_MS = 2000;
const ENDED_RESULTS = ['FINISHED', 'FAILURE', 'OFFLINE', 'NO_ANSWER', 'CANCELLED'];

async function loadAll() {
  const [{ devices }, me, { scripts }, schedules] = await Promise.all([
    api('GET', '/api/devices'),
    api('GET', '/api/me'),
    api('GET', '/api/scripts').catch(() => ({ scripts: [] })),
    loadSchedules(),
    // Whether the controller serves several stores (the Stores page is offered then).
    loadStores().catch(() => {}),
  ]);
  // The store's time zone is its schedules' (docs/decisions/dashboard-time-zone.md).
  setStoreZone(schedules[0]?.timezone);
  state.me = me;
  state.scripts = new Map(scripts.map((s) => [s.scriptId, s]));
  state.devices = new Map(devices.map((d) => [deviceKey(d), d]));
  renderDevices(devices);
  $('new-job-link').hidden = !may('operate');
  showCurrent();
  await loadWebhooks();
}

// The stream opens with a single-use ticket (never the token in a URL), so the browser's own
// retry cannot succeed: every error closes the stream and a new ticket opens the next one.
async function connectEvents() {
  let ticket;
  try {
    ({ ticket } = await api('POST', '/api/events/ticket'));
  } catch (error) {
    showFailure(error);
    if (state.token) setTimeout(connectEvents, RECONNECT_MS);
    return;
  }
  if (!state.token) return;
  const events = new EventSource(`/api/events?ticket=${encodeURIComponent(ticket)}`);
  state.events = events;
  // Every (re)connection reloads the lists, so nothing that happened while disconnected is missed.
  events.onopen = () => {
    setConnection('Live');
    loadAll().catch(showFailure);
  };
  events.onerror = () => {
    events.close();
    if (state.events !== events) return;
    setConnection('Reconnecting…');
    setTimeout(() => {
      if (state.events === events) void connectEvents();
    }, RECONNECT_MS);
  };
  events.addEventListener('device', (message) => {
    const device = JSON.parse(message.data);
    state.devices.set(deviceKey(device), device);
    renderDevice(device);
    onDeviceChange(device);
    onStoreRegisterChange(device);
    onStoreDeviceChange();
  });
  events.addEventListener('job', (message) => {
    const job = JSON.parse(message.data);
    // A schedule's run moves its next runs on.
    if (job.scheduleId && !state.jobs.has(job.jobId)) loadSchedules().catch(showFailure);
    onJob(job);
    if (job.result && ENDED_RESULTS.includes(job.result.status)) onResultOf(deviceKey(job.result));
  });
}

function loggedIn() {
  $('login-view').hidden = true;
  $('app-view').hidden = false;
  $('logout').hidden = false;
  setConnection('Connecting…');
  // For the figures of docs/dashboard.md ("Performance").
  performance.mark('dashboard-shown');
  showCurrent();
  // The page's data is read at once; the stream's opening reads it again (nothing missed between).
  loadAll().catch(showFailure);
  void connectEvents();
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
setUpSchedules();
$('logout').addEventListener('click', logOut);
const signingOn = takeSignOn();
if (signingOn !== undefined) {
  void signingOn.then((signedOn) => {
    // A refused sign-on keeps a session this tab already had.
    if (signedOn || state.token) loggedIn();
    else $('login-user').focus();
  });
} else if (state.token) loggedIn();
else $('login-user').focus();
offerSignOn().catch(() => {});
// The hint keeps its plain fallback text if the table cannot be read.
loadScriptHelp().catch(() => {});
