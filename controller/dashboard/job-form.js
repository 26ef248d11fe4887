// The guided form that starts a job (POST /api/jobs): a script typed or taken from the library
// (with its parameters), a target with a live count of the registers it reaches, rollout options
// behind "Advanced", a confirmation naming the count and the script, errors in the form's words.
import { api, Unauthorized } from './api.js';
import { confirmSend, targetCount } from './confirm-send.js';
import { $, el, field } from './dom.js';
import { formProblem, inFormWords } from './form-checks.js';
import { onJob } from './jobs.js';
import { jobPath } from './names.js';
import { navigate, onShow } from './router.js';
import { loggedOut } from './session.js';
import { state } from './state.js';
import { neverSeen, parseAttributes, reached } from './target.js';

function numberField(form, name) {
  const raw = form.elements[name].value.trim();
  return raw === '' ? undefined : Number(raw);
}

function list(text) {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The API's target: a group or registers, narrowed by stores and attributes when given. */
function target(form) {
  const text = form.elements.target.value.trim();
  const stores = $('job-stores-field').hidden ? [] : list(form.elements.stores.value);
  const attributes = parseAttributes(form.elements.attributes.value);
  return {
    ...(form.elements.targetKind.value === 'group' ? { group: text } : { devices: list(text) }),
    ...(stores.length > 0 && { stores }),
    ...(attributes && { attributes }),
  };
}

/** "Reaches 8 registers (7 online)" under the target, as it is typed. */
export function showTargetCount() {
  const form = $('job-form');
  $('job-stores-field').hidden = state.stores.length === 0;
  const aim = target(form);
  const reaches = reached(aim);
  const online = reaches.filter((d) => d.online).length;
  const count = targetCount(aim);
  // Listed ids this controller never saw (a plain list only: the others are counted as known).
  const unknown = aim.devices && !aim.stores && !aim.attributes ? neverSeen(aim.devices).length : 0;
  $('job-target-count').textContent =
    `Reaches ${count} ${count === 1 ? 'register' : 'registers'} (${online} online)` +
    (unknown > 0 ? `; ${unknown} never seen by this controller` : '');
  const options =
    form.elements.targetKind.value === 'group'
      ? ['all', ...new Set([...state.devices.values()].flatMap((d) => d.groups ?? []))]
      : [...state.devices.keys()];
  $('job-target-options').replaceChildren(...options.map((value) => el('option', { value })));
  $('job-store-options').replaceChildren(...state.stores.map((s) => el('option', { value: s.store })));
}

function chosenScript(form) {
  return state.scripts.get(form.elements.scriptId.value);
}

/**
 * A field per parameter of a library script (here and on the library page), with its default;
 * `markRequired`: the browser asks for the required ones.
 */
export function paramInputs(script, { idPrefix, namePrefix = '', markRequired = false }) {
  return script.params.map((param) => {
    const id = `${idPrefix}${param.name}`;
    const name = `${namePrefix}${param.name}`;
    const input =
      param.type === 'enum'
        ? el('select', { id, name }, ...param.values.map((v) => el('option', { value: v }, v)))
        : el('input', {
            id,
            name,
            ...(param.type === 'integer' && { type: 'number', step: '1' }),
            ...(param.pattern && { pattern: param.pattern }),
            ...(markRequired && param.required && { required: true }),
          });
    if (param.default !== undefined) input.value = String(param.default);
    return field(param.name, input);
  });
}

function showScriptKind() {
  const form = $('job-form');
  const library = form.elements.scriptKind.value === 'library';
  $('job-library-field').hidden = !library;
  $('job-typed-field').hidden = library;
  form.elements.script.required = !library;
  const script = chosenScript(form);
  $('job-library-params').replaceChildren(
    ...(library && script
      ? paramInputs(script, { idPrefix: 'job-param-', namePrefix: 'param:', markRequired: true })
      : []),
  );
  $('job-library-body').textContent = library && script ? script.body : '';
}

/** The library's scripts as choices (state.scripts is filled at login). */
export function fillLibraryChoices() {
  const select = $('job-library');
  const chosen = select.value;
  select.replaceChildren(
    ...[...state.scripts.values()].map((s) =>
      el('option', { value: s.scriptId }, `${s.name} (v${s.version})`),
    ),
  );
  if (state.scripts.has(chosen)) select.value = chosen;
  showScriptKind();
}

function scriptPart(form) {
  if (form.elements.scriptKind.value !== 'library') return { script: form.elements.script.value };
  const script = chosenScript(form);
  const params = {};
  for (const param of script?.params ?? []) {
    const value = form.elements[`param:${param.name}`].value;
    if (value === '') continue;
    params[param.name] = param.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return { scriptRef: { scriptId: script?.scriptId ?? '', params } };
}

export async function startJob(event) {
  event.preventDefault();
  const form = event.target;
  $('job-error').textContent = '';
  if (form.elements.scriptKind.value === 'library' && !chosenScript(form)) {
    $('job-error').textContent =
      'Library entry: choose one (the library is empty: add one on the Scripts page)';
    return;
  }
  const problem = formProblem(form);
  if (problem) {
    $('job-error').textContent = problem.message;
    if ($('job-advanced').contains(problem.field)) $('job-advanced').open = true;
    problem.field.focus();
    return;
  }
  const batchSize = numberField(form, 'batchSize');
  const maxPerMinute = numberField(form, 'maxPerMinute');
  const failureRatio = numberField(form, 'failureRatio');
  const deadlineSeconds = numberField(form, 'deadlineSeconds');
  const body = {
    ...scriptPart(form),
    target: target(form),
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
  const library = chosenScript(form);
  const shown = body.scriptRef
    ? { text: library.body, name: `${library.name} (library, v${library.version})` }
    : { text: body.script };
  const button = form.querySelector('button[type=submit]');
  button.disabled = true;
  try {
    if (!(await confirmSend(body, shown))) return;
    const job = await api('POST', '/api/jobs', body);
    onJob(job);
    navigate(jobPath(job.jobId));
  } catch (error) {
    if (error instanceof Unauthorized) return loggedOut();
    $('job-error').textContent = inFormWords(error.message);
  } finally {
    button.disabled = false;
  }
}

const form = $('job-form');
form.addEventListener('submit', startJob);
form.addEventListener('input', (event) => {
  if (['target', 'targetKind', 'stores', 'attributes'].includes(event.target.name)) showTargetCount();
  if (['scriptKind', 'scriptId'].includes(event.target.name)) showScriptKind();
});
// Opened from a register's page (?devices=reg7), a link naming a group (?group=front) or a
// store's page (?stores=s2).
onShow('new-job', (params) => {
  if (params.stores) {
    form.elements.targetKind.value = 'group';
    form.elements.target.value = 'all';
    form.elements.stores.value = params.stores;
  }
  if (params.attributes) form.elements.attributes.value = params.attributes;
  if (params.devices) {
    form.elements.targetKind.value = 'devices';
    form.elements.target.value = params.devices;
  } else if (params.group) {
    form.elements.targetKind.value = 'group';
    form.elements.target.value = params.group;
  }
  $('job-error').textContent = '';
  fillLibraryChoices();
  showTargetCount();
});
