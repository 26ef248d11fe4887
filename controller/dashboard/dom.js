// DOM helpers of the dashboard (docs/dashboard.md). Every text from the API goes through
// textContent (el's children are appended as text nodes), never innerHTML.

export const $ = (id) => document.getElementById(id);

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined) continue;
    if (key === 'class') node.className = value;
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

/**
 * The store's time zone: the time zone of its schedules (the only place the controller keeps
 * one, docs/decisions/dashboard-time-zone.md), else the browser's own.
 */
let storeZone;

export function setStoreZone(zone) {
  storeZone = zone;
}

export function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, {
    dateStyle: 'medium',
    timeStyle: 'short',
    ...(storeZone && { timeZone: storeZone }),
  });
}

/** Has the browser download `blob` as `filename`. */
export function saveFile(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The non-empty (trimmed) values of a form's fields `names`, added to `params`. */
export function formParams(form, names, params = new URLSearchParams()) {
  for (const name of names) {
    const value = form.elements[name].value.trim();
    if (value !== '') params.set(name, value);
  }
  return params;
}

/** A labelled form field; the label points at the control by its id. */
export function field(label, control) {
  return el('div', { class: 'field' }, el('label', { for: control.id }, label), control);
}

/** A table shown as cards on narrow screens (dashboard.css); its caption is for screen readers. */
export function cardTable(id, caption, headings) {
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      { id, class: 'cards' },
      el('caption', { class: 'visually-hidden' }, caption),
      el('thead', {}, el('tr', {}, ...headings.map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody'),
    ),
  );
}
