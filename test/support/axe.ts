/**
 * The axe-core accessibility audit in a dashboard page. The page's Content-Security-Policy
 * refuses injected scripts, so the audited pages are opened in a context with `bypassCSP` (test
 * only; the other suites check that nothing of the dashboard itself breaks the policy).
 */
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

export const AXE_SCRIPT = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Serious and critical violations of the page as it is now, one line each. */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof globalThis.axe !== "undefined"')))
    await page.addScriptTag({ path: AXE_SCRIPT });
  const violations = (await page.evaluate(
    'globalThis.axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)',
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
