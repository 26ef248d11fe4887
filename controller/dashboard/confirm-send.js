// Before a job is sent: a dialog that says how many registers and which script, so one click
// cannot send a Z REPORT (which closes the fiscal day) to every register by accident.
import { el } from './dom.js';
import { targetWords } from './names.js';
import { simulatorCommands } from './script-help.js';
import { neverSeen, reached } from './target.js';

/**
 * Registers the target reaches: the known ones it matches (a plain id is that id in every
 * store), plus, for a plain list, each id never seen (it is sent when that register connects).
 */
export function targetCount(target) {
  const known = reached(target).length;
  if (!target.devices || target.stores || target.attributes) return known;
  return known + neverSeen(target.devices).length;
}

/** Table entries of the commands the script uses that close or change the day (Z REPORT). */
function weighty(script) {
  const lines = script.split(/\r?\n/).map((l) => l.trim().toUpperCase().split(/\s+/).slice(0, 2).join(' '));
  return simulatorCommands.filter((c) => c.command === 'Z REPORT' && lines.includes(c.command));
}

/**
 * Resolves true when the person chose to send, false when they went back. `shown`: the script's
 * text and, for a library script, its name.
 */
export function confirmSend(body, shown = { text: body.script }) {
  const count = targetCount(body.target);
  const registers = `${count} ${count === 1 ? 'register' : 'registers'}`;
  const where = targetWords(body.target);
  const send = el('button', { type: 'button', class: 'danger' }, `Send to ${registers}`);
  const back = el('button', { type: 'button', class: 'secondary' }, 'Back');
  const dialog = el(
    'dialog',
    { 'aria-labelledby': 'confirm-heading', class: 'confirm' },
    el('h2', { id: 'confirm-heading' }, `Send this script to ${registers}?`),
    el('p', {}, `Target: ${where}${body.name ? ` · job "${body.name}"` : ''}`),
    shown.name ? el('p', {}, `Script: ${shown.name}`) : null,
    ...weighty(shown.text).map((c) => el('p', { class: 'error' }, `${c.command}: ${c.description}.`)),
    el('pre', {}, shown.text),
    el('div', { class: 'actions' }, send, back),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    send.addEventListener('click', () => done(true));
    back.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', () => done(false));
    dialog.showModal();
    back.focus();
  });
}
