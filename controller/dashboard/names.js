// Names a person reads instead of ids: a job without a name is called after its script and
// target ("Z report · group all (12)"), a register's page lives under its store.
import { state } from './state.js';

const FIRST_LINE_CHARS = 40;

function firstLine(script) {
  const line = (script ?? '').split(/\r?\n/).find((l) => l.trim() !== '') ?? 'script';
  return line.length > FIRST_LINE_CHARS ? `${line.slice(0, FIRST_LINE_CHARS - 1)}…` : line.trim();
}

export function scriptName(job) {
  const ref = job.scriptRef;
  if (ref && state.scripts.has(ref.scriptId)) return state.scripts.get(ref.scriptId).name;
  return firstLine(job.script);
}

export function targetName(job) {
  const total = job.counts?.total;
  const count = total === undefined ? '' : ` (${total})`;
  if (!job.target) return `${total ?? ''} registers`.trim();
  const { group, devices: ids, stores, attributes } = job.target;
  if (stores || attributes) return `${targetWords(job.target)}${count}`;
  if (group !== undefined) return `group ${group}${count}`;
  return ids.length === 1 ? `register ${ids[0]}` : `${ids.length} registers`;
}

/** The target in words: `group front · stores s1, s2 · region=north`. */
export function targetWords(target) {
  return [
    target.group !== undefined ? `group ${target.group}` : undefined,
    target.devices ? target.devices.join(', ') : undefined,
    target.stores
      ? `${target.stores.length === 1 ? 'store' : 'stores'} ${target.stores.join(', ')}`
      : undefined,
    target.attributes
      ? Object.entries(target.attributes)
          .map(([name, value]) => `${name}=${value}`)
          .join(', ')
      : undefined,
  ]
    .filter(Boolean)
    .join(' · ');
}

export function jobTitle(job) {
  return job.name ?? `${scriptName(job)} · ${targetName(job)}`;
}

export function jobPath(jobId) {
  return `/jobs/${encodeURIComponent(jobId)}`;
}

/**
 * A register's key: `<store>/<id>` when the controller serves several stores (the API then names
 * each register's store), its id otherwise; ids and store names never hold `/`.
 */
export function deviceKey(device) {
  return typeof device.store === 'string' && device.store !== ''
    ? `${device.store}/${device.deviceId}`
    : device.deviceId;
}

export function registerPath(device) {
  const id = encodeURIComponent(device.deviceId);
  return typeof device.store === 'string' && device.store !== ''
    ? `/registers/${encodeURIComponent(device.store)}/${id}`
    : `/registers/${id}`;
}
