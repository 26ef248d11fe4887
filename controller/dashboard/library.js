// The script library, starting jobs from it and approvals (docs/controller.md, "Script library",
// "Approval"). Controls a role may not use are hidden (GET /api/me); the API refuses them anyway.
// Every text from the API goes through textContent (el), never innerHTML.

import { api } from './api.js';
import { $, el, when } from './dom.js';
import { fillLibraryChoices, paramInputs } from './job-form.js';
import { jobPath } from './names.js';
import { showFailure } from './session.js';
import { may, state } from './state.js';

function problemList(problems) {
  return el(
    'ul',
    { class: 'error' },
    ...problems.map((p) => el('li', {}, p.line !== undefined ? `line ${p.line}: ${p.message}` : p.message)),
  );
}

/** The parameters' values as the API takes them: integers as numbers. */
function paramValues(form, script) {
  const params = {};
  for (const param of script.params) {
    const value = form.elements[param.name].value;
    if (value === '') continue;
    params[param.name] = param.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return params;
}

function startForm(script) {
  const output = el('div', { class: 'preview', 'aria-live': 'polite' });
  const target = el('input', { name: 'target', value: 'all', 'aria-label': `Group for ${script.name}` });
  const form = el(
    'form',
    { class: 'card library-start' },
    ...paramInputs(script, { idPrefix: `param-${script.scriptId}-` }),
    el('label', {}, 'Group ', target),
    el('button', { type: 'button', class: 'secondary preview-button' }, 'Preview'),
    el('button', { type: 'submit' }, `Start ${script.name}`),
    output,
  );
  const ref = () => ({ scriptId: script.scriptId, params: paramValues(form, script) });
  form.querySelector('.preview-button').addEventListener('click', async () => {
    try {
      const result = await api('POST', '/api/scripts/validate', { scriptRef: ref() });
      output.replaceChildren(
        ...(result.script !== undefined ? [el('pre', {}, result.script)] : []),
        result.problems.length ? problemList(result.problems) : el('p', {}, 'No problems.'),
      );
    } catch (error) {
      output.replaceChildren(el('p', { class: 'error' }, error.message));
    }
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const job = await api('POST', '/api/jobs', { scriptRef: ref(), target: { group: target.value } });
      output.replaceChildren(
        el(
          'p',
          { class: 'job-started' },
          el('a', { href: jobPath(job.jobId) }, `Job ${job.jobId}`),
          `: ${job.status}`,
        ),
      );
    } catch (error) {
      output.replaceChildren(el('p', { class: 'error' }, error.message));
    }
  });
  return form;
}

function fillEditor(script) {
  const form = $('library-editor');
  form.elements.scriptId.value = script?.scriptId ?? '';
  form.elements.name.value = script?.name ?? '';
  form.elements.body.value = script?.body ?? '';
  form.elements.params.value = JSON.stringify(script?.params ?? [], null, 1);
  form.elements.requiresApproval.checked = script?.requiresApproval ?? false;
  $('library-editor-output').replaceChildren();
}

async function showVersions(script, into) {
  const { scripts } = await api('GET', `/api/scripts/${script.scriptId}/versions`);
  into.replaceChildren(
    el(
      'ol',
      {},
      ...scripts.map((v) => el('li', {}, `v${v.version} by ${v.createdBy}, ${when(v.createdAt)}`)),
    ),
  );
}

async function loadScripts() {
  const { scripts } = await api('GET', '/api/scripts');
  state.scripts = new Map(scripts.map((s) => [s.scriptId, s]));
  fillLibraryChoices();
  $('library-list').replaceChildren(
    ...scripts.map((script) => {
      const versions = el('div', { class: 'versions' });
      const item = el(
        'li',
        { class: 'card library-script' },
        el('h3', {}, `${script.name} `, el('span', { class: 'muted' }, `v${script.version}`)),
        script.description ? el('p', {}, script.description) : null,
        script.requiresApproval ? el('p', { class: 'muted' }, 'Needs approval') : null,
        el('pre', {}, script.body),
        el('button', { type: 'button', class: 'secondary versions-button' }, 'Versions'),
        may('author') ? el('button', { type: 'button', class: 'secondary edit-button' }, 'Edit') : null,
        versions,
        may('operate') ? startForm(script) : null,
      );
      item
        .querySelector('.versions-button')
        .addEventListener('click', () => showVersions(script, versions).catch(showFailure));
      item.querySelector('.edit-button')?.addEventListener('click', () => fillEditor(script));
      return item;
    }),
  );
  $('library-empty').hidden = scripts.length > 0;
}

async function saveScript(event) {
  event.preventDefault();
  const form = event.target;
  const output = $('library-editor-output');
  let params;
  try {
    params = JSON.parse(form.elements.params.value || '[]');
  } catch {
    output.replaceChildren(el('p', { class: 'error' }, 'Parameters: not valid JSON'));
    return;
  }
  const draft = {
    name: form.elements.name.value,
    body: form.elements.body.value,
    params,
    requiresApproval: form.elements.requiresApproval.checked,
  };
  const id = form.elements.scriptId.value;
  try {
    const saved = await api(id ? 'PUT' : 'POST', id ? `/api/scripts/${id}` : '/api/scripts', draft);
    output.replaceChildren(el('p', { class: 'saved' }, `Saved ${saved.name} v${saved.version}`));
    fillEditor(saved);
    output.replaceChildren(el('p', { class: 'saved' }, `Saved ${saved.name} v${saved.version}`));
    await loadScripts();
  } catch (error) {
    output.replaceChildren(el('p', { class: 'error' }, error.message));
  }
}

async function checkDraft() {
  const result = await api('POST', '/api/scripts/validate', {
    script: $('library-editor').elements.body.value,
  });
  $('library-editor-output').replaceChildren(
    result.problems.length ? problemList(result.problems) : el('p', {}, 'Every line is a known command.'),
  );
}

async function decide(jobId, decision) {
  try {
    await api('POST', `/api/jobs/${jobId}/${decision}`, {});
  } catch (error) {
    $('approvals-error').textContent = error.message;
  }
  await loadApprovals();
}

async function loadApprovals() {
  const { jobs } = await api('GET', '/api/jobs?limit=200');
  const waiting = jobs.filter((job) => job.status === 'WAITING_FOR_APPROVAL');
  $('approvals-list').replaceChildren(
    ...waiting.map((job) => {
      const mine = job.createdBy === state.me.user;
      const item = el(
        'li',
        { class: 'card approval' },
        el('p', {}, `${job.name ?? job.jobId} by ${job.createdBy}, ${when(job.createdAt)}`),
        el('pre', {}, job.script),
        may('approve') && !mine ? el('button', { type: 'button', class: 'approve' }, 'Approve') : null,
        may('approve') && !mine ? el('button', { type: 'button', class: 'secondary deny' }, 'Deny') : null,
      );
      item.querySelector('.approve')?.addEventListener('click', () => decide(job.jobId, 'approve'));
      item.querySelector('.deny')?.addEventListener('click', () => decide(job.jobId, 'deny'));
      return item;
    }),
  );
  $('approvals-empty').hidden = waiting.length > 0;
}

async function shown() {
  state.me = await api('GET', '/api/me');
  const me = state.me;
  $('whoami').textContent = `${me.user} (${me.role}${me.scope ? `, ${me.scope}` : ''})`;
  $('whoami').hidden = false;
  $('new-job-link').hidden = !may('operate');
  $('library-editor').hidden = !may('author');
  $('library').hidden = false;
  await Promise.all([loadScripts(), loadApprovals()]);
  // The page listens to the event stream only: a job waiting or decided changes the approvals.
  state.events?.addEventListener('job', () => loadApprovals().catch(showFailure));
}

$('library-editor').addEventListener('submit', saveScript);
$('library-check').addEventListener('click', () => checkDraft().catch(showFailure));
$('library-new').addEventListener('click', () => fillEditor(undefined));
new MutationObserver(() => {
  if (!$('app-view').hidden) shown().catch(showFailure);
}).observe($('app-view'), { attributes: true, attributeFilter: ['hidden'] });
if (!$('app-view').hidden) shown().catch(showFailure);
