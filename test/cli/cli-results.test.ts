/**
 * `regbridge results` as a child process against a real controller service (HTTP on a free
 * port, a real history file holding two ended jobs): the table (escapes from registers
 * neutralised), `--csv` byte for byte the service's export and read back with csv-parse, a
 * filter, REGBRIDGE_USER, and the refusals: a wrong password (exit 2, never printed), no login,
 * a bad filter, an unreachable service (exit 1). docs/controller.md, "Search and export".
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
import { TestPki } from '../support/certs.ts';
import { runCli } from '../support/controller-cli.ts';
import { ADMIN, login, startService } from '../support/controller-service.ts';
import { freePort } from '../support/ports.ts';

const ns = `stores/resultscli${randomUUID().slice(0, 6)}`;
const dir = mkdtempSync(join(tmpdir(), 'regbridge-results-cli-'));
let broker: RunningBroker;
let service: RunningControllerService;
let url: string;
const USER = `${ADMIN.name}:${ADMIN.password}`;

const Z_REPORT = 'Z REPORT 22.11\r\ntotal "net", 12,50 €\r\nCafé Müller';

function seed(file: string): void {
  const db = openHistory(file);
  const history = new JobHistory(db);
  const jobs = [
    // Inserted oldest first: the history lists the job inserted last first.
    {
      jobId: 'job-x',
      name: 'X report',
      at: '2026-11-20T18:00:00.000Z',
      results: { reg1: { status: 'FINISHED' as const, report: 'X REPORT ok' } },
    },
    {
      jobId: 'job-z',
      name: 'Z report',
      at: '2026-11-22T23:00:00.000Z',
      results: {
        reg1: { status: 'FINISHED' as const, report: Z_REPORT },
        reg2: { status: 'FAILURE' as const, error: 'fiscal memory full\u001b]52;c;ZXZpbA==\u0007' },
      },
    },
  ];
  for (const job of jobs) {
    const devices = Object.keys(job.results);
    history.insert({
      jobId: job.jobId,
      name: job.name,
      createdBy: 'admin',
      createdAt: job.at,
      status: 'IN_PROGRESS',
      script: 'Z REPORT',
      target: { devices },
      deadlineAt: job.at,
      results: devices.map((deviceId) => ({ deviceId, status: 'PENDING' as const })),
    });
    for (const [deviceId, result] of Object.entries(job.results))
      history.saveResult(job.jobId, { deviceId, ...result, sentAt: job.at, endedAt: job.at });
    history.saveStatus(job.jobId, 'COMPLETED', job.at);
  }
  db.close();
}

beforeAll(async () => {
  const file = join(dir, 'history.db');
  seed(file);
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { db: file });
  url = `http://127.0.0.1:${service.httpPort}`;
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('regbridge results', () => {
  it('prints the results as a table, newest job first, escapes from registers neutralised', async () => {
    const out = await runCli(['results', '--url', url, '--user', USER]);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = out.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^JOB\s+NAME\s+DEVICE\s+STATUS\s+ENDED\s+DETAIL$/);
    expect(lines).toHaveLength(5);
    expect(lines[2]).toMatch(
      /^job-z\s+Z report\s+reg2\s+FAILURE\s+2026-11-22T23:00:00.000Z\s+fiscal memory full\?\]52;c;ZXZpbA==\?$/,
    );
    expect(lines[3]).toMatch(/^job-z\s+Z report\s+reg1\s+FINISHED\s+.*Z REPORT 22\.11$/);
    expect(lines[4]).toMatch(/^job-x\s+X report\s+reg1\s+FINISHED\s+.*X REPORT ok$/);
    expect(out.stdout).not.toContain('\u001b');
    // The command ends the token it logged in for: each login is followed by a logout.
    const token = await login(service.app);
    const audit = (await (
      await fetch(`${url}/api/audit?user=admin`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { entries: { action: string }[] };
    expect(audit.entries.slice(0, 2).map((entry) => entry.action)).toEqual(['login', 'logout']);
  });

  it('--csv streams the service export unchanged, read back by csv-parse', async () => {
    const token = await login(service.app);
    const direct = await fetch(`${url}/api/results`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/csv' },
    });
    const expected = await direct.text();
    // The user from REGBRIDGE_USER, as for the other commands.
    const out = await runCli(['results', '--url', url, '--csv'], { env: { REGBRIDGE_USER: USER } });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(`\uFEFF${expected.replace(/^\uFEFF/, '')}`);
    const rows = parse(out.stdout, { bom: true, columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.jobId, row.deviceId, row.status])).toEqual([
      ['job-z', 'reg2', 'FAILURE'],
      ['job-z', 'reg1', 'FINISHED'],
      ['job-x', 'reg1', 'FINISHED'],
    ]);
    expect(rows[1]!.report).toBe(Z_REPORT);
  });

  it('passes the filters to the service (--status, --to, --q, --limit)', async () => {
    const failed = await runCli(['results', '--url', url, '--user', USER, '--status', 'FAILURE', '--csv']);
    expect(failed.code).toBe(0);
    const rows = parse(failed.stdout, { bom: true, columns: true }) as Record<string, string>[];
    expect(rows.map((row) => row.deviceId)).toEqual(['reg2']);

    const older = await runCli(['results', '--url', url, '--user', USER, '--to', '2026-11-21']);
    expect(older.code).toBe(0);
    expect(older.stdout).toContain('job-x');
    expect(older.stdout).not.toContain('job-z');

    const words = await runCli(['results', '--url', url, '--user', USER, '--q', 'café']);
    expect(words.stdout.trimEnd().split('\n').slice(2)).toEqual([
      expect.stringMatching(/^job-z\s+.*reg1\s+FINISHED/),
    ]);

    const limited = await runCli(['results', '--url', url, '--user', USER, '--limit', '1']);
    expect(limited.stdout.trimEnd().split('\n')).toHaveLength(3);
    expect(limited.stderr).toContain('raise --limit');
  });

  it('a wrong password: exit 2, naming --user, the password never printed', async () => {
    const out = await runCli(['results', '--url', url, '--user', 'admin:Secret-Wrong-42']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('wrong user name or password in --user');
    expect(out.stdout + out.stderr).not.toContain('Secret-Wrong-42');
    expect(out.stdout).toBe('');
  });

  it('usage problems exit 2 naming the flag; an unreachable service exits 1', async () => {
    const noLogin = await runCli(['results', '--url', url]);
    expect(noLogin.code).toBe(2);
    expect(noLogin.stderr).toContain('needs a login: pass --user NAME:PASSWORD');

    const badStatus = await runCli(['results', '--url', url, '--user', USER, '--status', 'BROKEN']);
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain('--status');

    const badFrom = await runCli(['results', '--url', url, '--user', USER, '--from', 'yesterday']);
    expect(badFrom.code).toBe(2);
    expect(badFrom.stderr).toContain('--from');

    const closed = await freePort();
    const down = await runCli(['results', '--url', `http://127.0.0.1:${closed}`, '--user', USER]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach the controller service');
    expect(down.stderr).toContain('check --url');
    expect(down.stderr).not.toContain(ADMIN.password);
  });

  it('--ca trusts the private CA of an https:// service; without it, exit 1 naming --ca', async () => {
    const pki = new TestPki();
    const ca = pki.ca('ca');
    const server = pki.issue('ca', 'server', '127.0.0.1', { server: true });
    const secure = await startService(broker, ns, {
      settings: { https: { cert: server.cert, key: server.key } },
    });
    try {
      const httpsUrl = `https://127.0.0.1:${secure.httpPort}`;
      const trusted = await runCli(['results', '--url', httpsUrl, '--user', USER, '--ca', ca.certPath]);
      expect(trusted.stderr).toBe('');
      expect(trusted.code).toBe(0);
      expect(trusted.stdout).toMatch(/^JOB\s+NAME\s+DEVICE/);
      const untrusted = await runCli(['results', '--url', httpsUrl, '--user', USER]);
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toContain('check --url and --ca');
    } finally {
      await secure.stop();
      pki.remove();
    }
  });
});
