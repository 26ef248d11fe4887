// Which known registers a job's target reaches, as the controller resolves it (docs/controller.md,
// "Many stores"): a group ("all": every one), registers (`store/id`, or a plain id in every store),
// stores and attributes; a register must match every condition given.
import { deviceKey } from './names.js';
import { state } from './state.js';

/** `region=north, tier=flagship` -> { region: 'north', tier: 'flagship' } (empty: undefined). */
export function parseAttributes(text) {
  const pairs = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      return at < 0 ? [pair, ''] : [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
    });
  return pairs.length === 0 ? undefined : Object.fromEntries(pairs);
}

function matches(device, target) {
  if (target.group !== undefined && target.group !== 'all' && !(device.groups ?? []).includes(target.group))
    return false;
  if (target.devices && !target.devices.some((id) => id === deviceKey(device) || id === device.deviceId))
    return false;
  if (target.stores && !target.stores.includes(device.store)) return false;
  if (target.attributes) {
    for (const [name, value] of Object.entries(target.attributes))
      if (device.attributes?.[name] !== value) return false;
  }
  return true;
}

/** The known registers `target` reaches. */
export function reached(target) {
  return [...state.devices.values()].filter((device) => matches(device, target));
}

/** Listed ids (`store/id` or plain) that match no register this dashboard knows. */
export function neverSeen(ids) {
  const known = [...state.devices.values()];
  return ids.filter((id) => !known.some((d) => id === deviceKey(d) || id === d.deviceId));
}
