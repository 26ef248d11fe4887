/** docs/errors.md and the registry in src/errors.ts list the same codes with the same statuses. */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { errorRegistry } from '../src/errors.ts';

interface Row {
  code: string;
  statusCode: number;
  reason: string;
  when: string;
}

function documentedRows(): Row[] {
  const text = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
  const lines = text.split('\n');
  const header = lines.findIndex((line) => /^\|\s*Code\s*\|\s*HTTP status\s*\|\s*When\s*\|\s*$/.test(line));
  expect(header, 'the table header | Code | HTTP status | When |').toBeGreaterThanOrEqual(0);
  const rows: Row[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    const status = /^(\d{3})\s+(.+)$/.exec(cells[1] ?? '');
    expect(status, `status cell of: ${line}`).not.toBeNull();
    rows.push({
      code: (cells[0] ?? '').replaceAll('`', ''),
      statusCode: Number(status![1]),
      reason: status![2]!,
      when: cells[2] ?? '',
    });
  }
  return rows;
}

it('every registered code is documented with its status, and nothing else is', () => {
  const rows = documentedRows();
  const documented = rows.map((row) => [row.code, row.statusCode, row.reason]);
  const registered = Object.entries(errorRegistry).map(([code, entry]) => [
    code,
    entry.statusCode,
    entry.error,
  ]);
  expect(documented).toEqual(registered);
});

it('every row says when the error happens, and codes are unique', () => {
  const rows = documentedRows();
  expect(new Set(rows.map((row) => row.code)).size).toBe(rows.length);
  for (const row of rows) expect(row.when.length, row.code).toBeGreaterThan(20);
});
