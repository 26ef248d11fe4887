// The webhooks page of the dashboard (docs/controller.md, "Webhooks"): add one (its secret is
// shown once, here), list them with their latest deliveries, delete one. Admins only: the API
// refuses other roles even the list, so for them the page stays hidden and nothing is asked.

import { api } from './api.js';
import { $, el, when } from './dom.js';
import { onShow } from './router.js';
import { showFailure } from './session.js';
import { may } from './state.js';

function deliveryLine(delivery) {
  const answer = delivery.lastStatus ?? delivery.lastError ?? '';
  return el(
    'li',
    {},
    `${when(delivery.createdAt)} ${delivery.event}: ${delivery.status}, ${delivery.attempts} attempt(s)`,
    answer === '' ? '' : ` (${answer})`,
  );
}

async function renderHook(hook) {
  const { deliveries } = await api(
    'GET',
    `/api/webhooks/${encodeURIComponent(hook.webhookId)}/deliveries?limit=5`,
  );
  const remove = el('button', { type: 'button', class: 'secondary' }, 'Delete');
  remove.setAttribute('aria-label', `Delete webhook ${hook.url}`);
  remove.addEventListener('click', () =>
    api('DELETE', `/api/webhooks/${encodeURIComponent(hook.webhookId)}`).then(loadWebhooks, showFailure),
  );
  return el(
    'li',
    { class: 'card' },
    el('strong', {}, hook.url),
    el('p', { class: 'muted' }, hook.events.join(', ')),
    deliveries.length === 0
      ? el('p', { class: 'muted' }, 'No delivery yet.')
      : el('ul', { class: 'deliveries' }, ...deliveries.map(deliveryLine)),
    remove,
  );
}

export async function loadWebhooks() {
  // The role was read at login (GET /api/me, dashboard.js).
  const admin = may('admin');
  $('webhooks-section').hidden = !admin;
  $('webhooks-admins').hidden = admin;
  $('nav-webhooks').hidden = !admin;
  if (!admin) return;
  const { webhooks } = await api('GET', '/api/webhooks');
  $('webhooks').replaceChildren(...(await Promise.all(webhooks.map(renderHook))));
  $('webhooks-empty').hidden = webhooks.length > 0;
}

async function addWebhook(event) {
  event.preventDefault();
  $('webhook-error').textContent = '';
  const form = event.target;
  const events = [...form.querySelectorAll('input[name=events]:checked')].map((box) => box.value);
  try {
    const created = await api('POST', '/api/webhooks', { url: form.elements.url.value.trim(), events });
    $('webhook-secret').textContent = `Secret (shown once, copy it now): ${created.secret}`;
    form.reset();
    await loadWebhooks();
  } catch (error) {
    $('webhook-error').textContent = error.message;
  }
}

$('webhook-form').addEventListener('submit', addWebhook);
$('webhooks-refresh').addEventListener('click', () => loadWebhooks().catch(showFailure));
onShow('webhooks', () => loadWebhooks().catch(showFailure));
