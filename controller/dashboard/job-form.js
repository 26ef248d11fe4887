// The form that starts a job (POST /api/jobs).
import { api, Unauthorized } from './api.js';
import { confirmSend } from './confirm-send.js';
import { $ } from './dom.js';
import { formProblem, inFormWords } from './form-checks.js';
import { onJob } from './jobs.js';
import { loggedOut } from './session.js';

function numberField(form, name) {
  const raw = form.elements[name].value.trim();
  return raw === '' ? undefined : Number(raw);
}

export async function startJob(event) {
  event.preventDefault();
  const form = event.target;
  $('job-error').textContent = '';
  const problem = formProblem(form);
  if (problem) {
    $('job-error').textContent = problem.message;
    problem.field.focus();
    return;
  }
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
    if (!(await confirmSend(body))) return;
    onJob(await api('POST', '/api/jobs', body));
  } catch (error) {
    if (error instanceof Unauthorized) return loggedOut();
    $('job-error').textContent = inFormWords(error.message);
  } finally {
    button.disabled = false;
  }
}
