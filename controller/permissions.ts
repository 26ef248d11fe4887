/**
 * What each role may do (docs/controller.md, "Users and roles"), and whether a register is inside
 * an operator's scope. One table; the HTTP layer maps its routes onto these actions.
 */
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
 * store scope. A register whose store is not known (a single-store controller: registers carry
 * no store yet) is outside every store scope, so such a scope fails closed.
 */
export function insideScope(scope: Scope | undefined, device: DeviceEntry | undefined): boolean {
  if (scope === undefined) return true;
  if (device === undefined) return false;
  if (scope.kind === 'group') return device.groups.some((group) => scope.values.includes(group));
  const store = (device as DeviceEntry & { store?: string }).store;
  return store !== undefined && scope.values.includes(store);
}
