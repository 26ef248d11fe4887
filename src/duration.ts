/** Durations on the command line: `120` (seconds), `120s`, `500ms`, `2m`, `1h`. */
export function durationMs(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] ?? 's';
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
  return Math.round(amount * factor);
}
