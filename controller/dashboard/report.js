// A register's report as people read it: monospace, wrapped, with Copy and Download.
import { el, saveFile } from './dom.js';

/** `what` names the report for the buttons' accessible names ("report of reg7"). */
export function reportBlock(text, what, filename) {
  const status = el('span', { class: 'muted', role: 'status' });
  const copy = el(
    'button',
    { type: 'button', class: 'secondary small', 'aria-label': `Copy ${what}` },
    'Copy',
  );
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = 'Copied';
    } catch {
      status.textContent = 'Copy refused by the browser: select the text instead';
    }
  });
  const download = el(
    'button',
    { type: 'button', class: 'secondary small', 'aria-label': `Download ${what}` },
    'Download',
  );
  download.addEventListener('click', () =>
    saveFile(new Blob([text], { type: 'text/plain;charset=utf-8' }), filename),
  );
  return el(
    'div',
    { class: 'report-box' },
    el('pre', { class: 'report' }, text),
    el('div', { class: 'report-actions' }, copy, download, status),
  );
}
