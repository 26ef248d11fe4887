// The store controller's dashboard (docs/controller.md, "Dashboard"): plain browser modules, no
// build step and no CDN, so it works offline in a store. State comes from the HTTP API once
// (GET /api/devices, GET /api/jobs) and then only from the event stream (GET /api/events): no
// polling. Every text from the API goes through textContent, never innerHTML.

import { api } from './api.js';
import './audit.js';
import { $ } from './dom.js';
import { startJob } from './job-form.js';
import { jobRank, keepNewer, loadJob, onJob, renderJob } from './jobs.js';
import { renderDevice } from './registers.js';
import './results.js';
import { loadSchedules, setUpSchedules } from './schedules.js';
import { loadScriptHelp } from './script-help.js';
import { logOut, setConnection, showFailure } from './session.js';
import { offerSignOn, takeSignOn } from './sign-on.js';
import { state, TOKEN_KEY } from './state.js';
import { loadWebhooks } from './webhooks.js';

const JOB_DETAILS_LOADED = 10;
const RECONNECT_MS = 2000;

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
  await Promise.all([
    loadSchedules(),
    ...jobs.slice(0, JOB_DETAILS_LOADED).map((job) => loadJob(job.jobId)),
    loadWebhooks(),
  ]);
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
    state.devices.set(device.deviceId, device);
    renderDevice(device);
  });
  events.addEventListener('job', (message) => {
    const job = JSON.parse(message.data);
    // A schedule's run moves its next runs on.
    if (job.scheduleId && !state.jobs.has(job.jobId)) loadSchedules().catch(showFailure);
    onJob(job);
  });
}

function loggedIn() {
  $('login-view').hidden = true;
  $('app-view').hidden = false;
  $('logout').hidden = false;
  setConnection('Connecting…');
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
$('job-form').addEventListener('submit', startJob);
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
