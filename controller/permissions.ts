/**
 * What each role may do (docs/controller.md, "Users and roles"), and whether a register is inside
 * an operator's scope. One table; the HTTP layer maps its routes onto these actions.
 */

import { storeOfKey } from './store-keys.ts';
import type { DeviceEntry } from './types.ts';
import type { Role, Scope } from './users.ts';

export type Action =
  /** Read devices, jobs, results, schedules, scripts, audit; the event stream. */
  | 'read'
  /** Create, cancel, pause, resume, rerun jobs (inside scope); run a schedule now. */
  | 'operate'
  /** Create and edit library scripts. */
  | 'author'
  /** Approve or deny a job it did not create. */
  | 'approve'
  /** Schedules, webhooks, and anything not listed. */
  | 'administer';

export const ROLE_ACTIONS: Readonly<Record<Role, readonly Action[]>> = {
  viewer: ['read'],
  operator: ['read', 'operate'],
  author: ['read', 'author'],
  approver: ['read', 'approve'],
  admin: ['read', 'operate', 'author', 'approve', 'administer'],
};

export function may(role: Role, action: Action): boolean {
  return ROLE_ACTIONS[role].includes(action);
}

/**
 * Whether a register is inside `scope`: one of its groups is in a group scope; its store is in a
 * store scope. A register never seen (`device` undefined) is inside a store scope when its key
 * (`store/id`, controller/store-keys.ts) names one of the scope's stores. A register without a
 * store (a single-store controller) is outside every store scope: such a scope fails closed.
 */
export function insideScope(
  scope: Scope | undefined,
  device: DeviceEntry | undefined,
  key?: string,
): boolean {
  if (scope === undefined) return true;
  if (scope.kind === 'store') {
    const store = device?.store ?? (key !== undefined ? storeOfKey(key) : undefined);
    return store !== undefined && scope.values.includes(store);
  }
  if (device === undefined) return false;
  return device.groups.some((group) => scope.values.includes(group));
}

/** Whether a store is inside `scope` (lists of a store-scoped operator show only its stores). */
export function storeInsideScope(scope: Scope | undefined, store: string | undefined): boolean {
  if (scope === undefined || scope.kind !== 'store') return true;
  return store !== undefined && scope.values.includes(store);
}
