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
