/** The one table the run prints: scenario, figure, value, baseline, ratio, goal, met?. */
import type { Figure, ScenarioOutcome } from './types.ts';

function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(abs >= 1 ? 2 : 3);
}

function cells(figure: Figure): string[] {
  const unit = figure.unit ? ` ${figure.unit}` : '';
  const value =
    figure.value === null
      ? `n/a${figure.note ? ` (${figure.note})` : ''}`
      : `${formatNumber(figure.value)}${unit}`;
  const baseline =
    figure.baseline === undefined
      ? ''
      : `${formatNumber(figure.baseline)}${unit}${figure.baselineLabel ? ` (${figure.baselineLabel})` : ''}`;
  const ratio = figure.ratio === undefined ? '' : `${formatNumber(figure.ratio)}x`;
  const met = figure.met === undefined ? '' : figure.met ? 'yes' : 'NO';
  return [figure.scenario, figure.figure, value, baseline, ratio, figure.goal ?? '', met];
}

export function renderTable(outcomes: ScenarioOutcome[]): string {
  const header = ['scenario', 'figure', 'value', 'baseline', 'ratio', 'goal', 'met?'];
  const rows: string[][] = [];
  for (const outcome of outcomes) {
    if (outcome.status !== 'ok') {
      rows.push([
        outcome.scenario,
        outcome.status.toUpperCase(),
        outcome.reason?.split('\n')[0] ?? '',
        '',
        '',
        '',
        '',
      ]);
    }
    for (const figure of outcome.figures) rows.push(cells(figure));
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => Math.min(r[i]!.length, 70))));
  const line = (r: string[]): string =>
    `| ${r.map((c, i) => (c.length > 70 ? `${c.slice(0, 67)}...` : c).padEnd(widths[i]!)).join(' | ')} |`;
  const rule = `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}
