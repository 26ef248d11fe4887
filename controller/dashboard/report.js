// A register's report as people read it: monospace, wrapped, with Copy and Download.
import { el } from './dom.js';

function save(text, filename) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  const link = el('a', { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

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
  download.addEventListener('click', () => save(text, filename));
  return el(
    'div',
    { class: 'report-box' },
    el('pre', { class: 'report' }, text),
    el('div', { class: 'report-actions' }, copy, download, status),
  );
}
