/**
 * docs/errors.md and the registry in src/errors.ts list the same codes with the same HTTP
 * statuses and MQTT uses, and every code docs/mqtt.md names as a refusal is registered for it.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { errorRegistry } from '../../src/errors.ts';

interface Row {
  code: string;
  http: string;
  mqtt: string;
  when: string;
}

function tableRows(file: string, header: RegExp): string[][] {
  const text = readFileSync(new URL(`../../docs/${file}`, import.meta.url), 'utf8');
  const lines = text.split('\n');
  const start = lines.findIndex((line) => header.test(line));
  expect(start, `${file}: the table header ${header}`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

function documentedRows(): Row[] {
  return tableRows('errors.md', /^\|\s*Code\s*\|\s*HTTP status\s*\|\s*MQTT\s*\|\s*When\s*\|\s*$/).map(
    ([code = '', http = '', mqtt = '', when = '']) => ({ code: code.replaceAll('`', ''), http, mqtt, when }),
  );
}

it('every registered code is documented with its status and MQTT use, and nothing else is', () => {
  const documented = documentedRows().map((row) => [row.code, row.http, row.mqtt]);
  const registered = Object.entries(errorRegistry).map(([code, entry]) => [
    code,
    'statusCode' in entry ? `${entry.statusCode} ${entry.error}` : '—',
    entry.mqtt.length > 0 ? entry.mqtt.join(', ') : '—',
  ]);
  expect(documented).toEqual(registered);
});

it('every row says when the error happens, and codes are unique', () => {
  const rows = documentedRows();
  expect(new Set(rows.map((row) => row.code)).size).toBe(rows.length);
  for (const row of rows) expect(row.when.length, row.code).toBeGreaterThan(20);
});

for (const [header, use] of [
  [/^\|\s*Code\s*\|\s*When\s*\|\s*$/, 'script refusal'],
  [/^\|\s*Cancel code\s*\|\s*When\s*\|\s*$/, 'cancel refusal'],
] as const) {
  it(`docs/mqtt.md's ${use} codes are the registry's`, () => {
    const codes = tableRows('mqtt.md', header).map(([code = '']) => code.replaceAll('`', ''));
    const registered = Object.entries(errorRegistry)
      .filter(([, entry]) => (entry.mqtt as readonly string[]).includes(use))
      .map(([code]) => code);
    expect(codes.sort()).toEqual(registered.sort());
  });
}
