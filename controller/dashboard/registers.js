// The registers table: one row per register, kept in id order.
import { $, el, when } from './dom.js';
import { state } from './state.js';

export function renderDevice(device) {
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
