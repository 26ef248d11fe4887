/**
 * What a job's script goes through before anything is sent (docs/controller.md, "Script
 * library"): a `scriptRef` is rendered from the library (every problem at once), and with
 * `--script-dialect simulator` every line is checked against the simulator's own command check
 * (src/executors/simulator.ts), the one the registers run.
 */
import { simulatorProblems } from '../src/executors/simulator.ts';
import type { ScriptRef } from './job-types.ts';
import type { ScriptLibrary } from './script-library.ts';
import { type Problem, renderScript } from './script-render.ts';

export const SCRIPT_DIALECTS = ['simulator', 'none'] as const;
export type ScriptDialect = (typeof SCRIPT_DIALECTS)[number];

export const APPROVAL_MODES = ['library', 'all'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** The lines of `script` the dialect refuses; `none` refuses nothing. */
export function dialectProblems(script: string, dialect: ScriptDialect): Problem[] {
  return dialect === 'simulator' ? simulatorProblems(script) : [];
}

export type RenderOutcome =
  | { kind: 'rendered'; script: string; ref: ScriptRef; requiresApproval: boolean }
  | { kind: 'unknown'; scriptId: string }
  | { kind: 'archived'; scriptId: string }
  | { kind: 'invalid'; problems: Problem[] };

/** A job's `scriptRef` rendered from the library (its latest version unless one is named). */
export function renderRef(
  library: ScriptLibrary,
  ref: {
    scriptId: string;
    version?: number | undefined;
    params?: Record<string, string | number> | undefined;
  },
): RenderOutcome {
  const script = library.get(ref.scriptId, ref.version);
  if (!script) return { kind: 'unknown', scriptId: ref.scriptId };
  if (script.archived) return { kind: 'archived', scriptId: ref.scriptId };
  const params = ref.params ?? {};
  const rendered = renderScript(script.body, script.params, params);
  if (rendered.script === undefined) return { kind: 'invalid', problems: rendered.problems };
  return {
    kind: 'rendered',
    script: rendered.script,
    ref: { scriptId: script.scriptId, version: script.version, params },
    requiresApproval: script.requiresApproval,
  };
}
