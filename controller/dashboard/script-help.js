// The script field's help, from the simulator's own command table (GET /api/simulator/commands):
// examples and the list of commands cannot name a command the registers refuse.
import { $, el } from './dom.js';

/** The commands whose examples the one-line hint shows, in this order. */
const HINTED = ['PRINT', 'X REPORT', 'RECEIPT OPEN'];

export let simulatorCommands = [];

export async function loadScriptHelp() {
  const response = await fetch('/api/simulator/commands');
  if (!response.ok) return;
  simulatorCommands = (await response.json()).commands;
  const help = $('job-script-help');
  const examples = HINTED.map((name) => simulatorCommands.find((c) => c.command === name)).filter(Boolean);
  const parts = ['One command per line, e.g. '];
  examples.forEach((c, i) => {
    parts.push(
      el('code', {}, c.example),
      i < examples.length - 2 ? ', ' : i === examples.length - 2 ? ' or ' : '.',
    );
  });
  const list = el('dl', { class: 'commands' });
  for (const c of simulatorCommands) {
    list.append(
      el('dt', {}, el('code', {}, c.usage)),
      el('dd', {}, `${c.description}, e.g. `, el('code', {}, c.example)),
    );
  }
  help.replaceChildren(...parts, el('details', {}, el('summary', {}, 'All commands'), list));
}
