/**
 * A head-office namespace (docs/controller.md, "Many stores"): `stores/+` names every store's
 * namespace at once, the `+` level being the store id. Only a controller (the service, `fanout`,
 * `watch`) takes one; a register and a store broker always serve one concrete namespace.
 */
import * as z from 'zod';
import { ID_PATTERN } from './topics.ts';

const LEVEL = /^[A-Za-z0-9_.-]+$/;

/** What is wrong with `ns` as a namespace that may hold one `+` level; undefined when fine. */
export function storeNamespaceProblem(ns: string): string | undefined {
  if (ns.length === 0 || ns.length > 200) return 'must be 1-200 characters';
  if (ns.startsWith('$')) return "must not start with $ (those topics are the broker's)";
  if (ns.includes('#')) return '# is not allowed: use one + level in place of the store id (stores/+)';
  const levels = ns.split('/');
  const pluses = levels.filter((level) => level === '+').length;
  if (pluses > 1) return `has ${pluses} + levels: at most one, in place of the store id (stores/+)`;
  for (const level of levels) {
    if (level === '+') continue;
    if (level.includes('+'))
      return `+ must be a whole level (stores/+), not part of ${JSON.stringify(level)}`;
    if (!LEVEL.test(level)) return 'levels must be non-empty and use only [A-Za-z0-9_.-] (or one + level)';
  }
  return undefined;
}

/** A namespace for a controller: one store's (`pos`, `stores/042`) or every store's (`stores/+`). */
export const storeNamespaceSchema = z.string().superRefine((ns, ctx) => {
  const problem = storeNamespaceProblem(ns);
  if (problem) ctx.addIssue({ code: 'custom', message: `namespace ${JSON.stringify(ns)}: ${problem}` });
});

export function isMultiStore(ns: string): boolean {
  return ns.split('/').includes('+');
}

/** One store's concrete namespace: the `+` level replaced by `store`. */
export function namespaceOfStore(ns: string, store: string): string {
  if (!ID_PATTERN.test(store)) throw new Error(`invalid store id ${JSON.stringify(store)}`);
  return ns
    .split('/')
    .map((level) => (level === '+' ? store : level))
    .join('/');
}

/**
 * The store of `topic` under a multi-store `ns` and that store's namespace; undefined when the
 * topic is not under `ns` or its store level is not a valid id (`[A-Za-z0-9_-]{1,64}`).
 */
export function storeOfTopic(ns: string, topic: string): { store: string; ns: string } | undefined {
  const pattern = ns.split('/');
  const levels = topic.split('/');
  if (levels.length <= pattern.length) return undefined;
  let store: string | undefined;
  for (let i = 0; i < pattern.length; i++) {
    const level = levels[i]!;
    if (pattern[i] === '+') {
      if (!ID_PATTERN.test(level)) return undefined;
      store = level;
    } else if (pattern[i] !== level) return undefined;
  }
  if (store === undefined) return undefined;
  return { store, ns: levels.slice(0, pattern.length).join('/') };
}

/**
 * `--store-link-topic`: topic levels under each store's namespace (`link/state`), no wildcard,
 * and not under `devices/` or `groups/` (the registers' own topics).
 */
export const storeLinkTopicSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/, 'topic levels of [A-Za-z0-9_.-], no wildcard (link/state)')
  .refine((topic) => !/^(devices|groups)(\/|$)/.test(topic), 'must not be under devices/ or groups/');
