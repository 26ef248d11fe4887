/**
 * Keeping the history bounded: the daily purge of `--history-days` with an injected clock (what
 * goes, what stays, the text index, the audit entry, the next day's run), the incremental
 * auto_vacuum that gives the pages back, and an online backup taken while the file is written,
 * restored by opening it as a history.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../controller/audit-log.ts';
import { BackupTargetExists, backupHistory } from '../../controller/history-backup.ts';
import { openHistory, prepare } from '../../controller/history-db.ts';
import { DAY_MS, HistoryRetention } from '../../controller/history-retention.ts';
import { JobHistory, type StoredJob } from '../../controller/job-history.ts';
import type { JobStatus } from '../../controller/job-types.ts';
import { ResultSearch } from '../../controller/result-search.ts';
import { Webhooks } from '../../controller/webhooks.ts';
import { brokersByName } from '../support/brokers.ts';
import { runCli } from '../support/controller-cli.ts';
import { api, login, startService } from '../support/controller-service.ts';
import { silent } from '../support/loggers.ts';
import { TestClock } from '../support/test-clock.ts';
import { until } from '../support/waits.ts';

const dirs: string[] = [];
function tempFile(name = 'history.db'): string {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-retention-'));
  dirs.push(dir);
  return join(dir, name);
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const NOW = Date.parse('2026-11-27T03:00:00.000Z');
const REPORT = 'Z-Bericht Umsatz 1.234,56 EUR '.repeat(20);

function addJob(history: JobHistory, jobId: string, endedDaysAgo: number | undefined, devices = 3): void {
  const at = new Date(NOW - (endedDaysAgo ?? 0) * DAY_MS - 60_000).toISOString();
  const job: StoredJob = {
    jobId,
    createdBy: 'admin',
    createdAt: at,
    status: 'IN_PROGRESS',
    script: 'Z REPORT',
    target: { devices: Array.from({ length: devices }, (_, i) => `reg${i}`) },
    deadlineAt: at,
    results: Array.from({ length: devices }, (_, i) => ({ deviceId: `reg${i}`, status: 'PENDING' as const })),
  };
  history.insert(job);
  if (endedDaysAgo === undefined) return;
  const endedAt = new Date(NOW - endedDaysAgo * DAY_MS).toISOString();
  for (let i = 0; i < devices; i++) {
    history.saveResult(jobId, {
      deviceId: `reg${i}`,
      status: 'FINISHED',
      report: `${REPORT} ${jobId}`,
      sentAt: at,
      endedAt,
    });
  }
  history.saveStatus(jobId, 'COMPLETED' as JobStatus, endedAt);
}

describe('--history-days', () => {
  it('deletes jobs that ended more than N days ago with their results and text, audits it, and runs again a day later', async () => {
    const db = openHistory(tempFile());
    const history = new JobHistory(db);
    const audit = new AuditLog(db);
    const search = new ResultSearch(db);
    addJob(history, 'old-40', 40);
    addJob(history, 'old-31', 31);
    addJob(history, 'recent-29', 29.5);
    addJob(history, 'running-old', undefined); // IN_PROGRESS, created 'now': never purged
    db.exec(`UPDATE jobs SET created_at = '2020-01-01T00:00:00.000Z' WHERE job_id = 'running-old'`);
    const clock = new TestClock(NOW);
    const retention = new HistoryRetention({ db, audit, days: 30, clock, logger: silent });

    const first = await retention.purge();
    expect(first).toEqual({ jobs: 2, results: 6, deliveries: 0, before: '2026-10-28T03:00:00.000Z' });
    expect(history.list(10)!.map((job) => job.jobId)).toEqual(['running-old', 'recent-29']);
    expect(history.get('old-40')).toBeUndefined();
    expect(search.page({ q: 'old-40' }, 10).results).toEqual([]);
    expect(search.page({ q: 'recent-29' }, 10).results).toHaveLength(3);
    expect(prepare(db, 'SELECT count(*) FROM results').pluck().get()).toBe(6);
    expect(audit.list(1)[0]).toEqual({
      at: '2026-11-27T03:00:00.000Z',
      user: 'system',
      address: '',
      action: 'history_purged',
      detail:
        '2 jobs, 6 results and 0 webhook deliveries that ended before 2026-10-28T03:00:00.000Z (--history-days 30)',
    });

    // The next purge is a day later; then recent-29 is 30.5 days old.
    expect([...clock.timers.values()].map((timer) => timer.at)).toEqual([NOW + DAY_MS]);
    clock.advance(DAY_MS - 1);
    expect(history.list(10)!.map((job) => job.jobId)).toEqual(['running-old', 'recent-29']);
    clock.advance(1);
    await until(() => audit.list(1)[0]!.at === new Date(NOW + DAY_MS).toISOString(), 'the second purge');
    expect(history.list(10)!.map((job) => job.jobId)).toEqual(['running-old']);
    expect(audit.list(1)[0]!.detail).toBe(
      '1 jobs, 3 results and 0 webhook deliveries that ended before 2026-10-29T03:00:00.000Z (--history-days 30)',
    );
    retention.stop();
    expect(clock.timers.size).toBe(0);
  });

  it('deletes webhook deliveries that ended (DELIVERED, FAILED) for events more than N days old', async () => {
    const db = openHistory(tempFile());
    const audit = new AuditLog(db);
    // Not started: emit() only stores the rows; their statuses are set below.
    const at = (daysAgo: number): Webhooks =>
      new Webhooks({ db, clock: new TestClock(NOW - daysAgo * DAY_MS), logger: silent });
    const hook = at(40).create({ url: 'http://127.0.0.1:9/hook', events: ['device.offline'] }, 'admin');
    for (const [daysAgo, status] of [
      [40, 'DELIVERED'],
      [31, 'FAILED'],
      [31, 'PENDING'],
      [29, 'DELIVERED'],
      [29, 'FAILED'],
    ] as const) {
      at(daysAgo).emit('device.offline', { deviceId: `${status}-${daysAgo}` });
      db.exec(`UPDATE webhook_deliveries SET status = '${status}' WHERE seq = last_insert_rowid()`);
    }
    const retention = new HistoryRetention({
      db,
      audit,
      days: 30,
      clock: new TestClock(NOW),
      logger: silent,
    });
    expect(await retention.purge()).toEqual({
      jobs: 0,
      results: 0,
      deliveries: 2,
      before: '2026-10-28T03:00:00.000Z',
    });
    retention.stop();
    const left = at(0)
      .deliveries(hook.webhookId, 10)
      .map((d) => [d.status, (Date.parse(d.createdAt) - NOW) / DAY_MS]);
    expect(left).toEqual([
      ['FAILED', -29],
      ['DELIVERED', -29],
      ['PENDING', -31], // still being tried: kept
    ]);
    expect(audit.list(1)[0]!.detail).toBe(
      '0 jobs, 0 results and 2 webhook deliveries that ended before 2026-10-28T03:00:00.000Z (--history-days 30)',
    );
  });

  it('gives the freed pages back to the file system (incremental auto_vacuum)', async () => {
    const file = tempFile();
    const db = openHistory(file);
    expect(prepare(db, 'PRAGMA auto_vacuum').pluck().get()).toBe(2); // INCREMENTAL
    const history = new JobHistory(db);
    for (let i = 0; i < 40; i++) addJob(history, `old-${i}`, 100, 50);
    addJob(history, 'kept', 1);
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const full = prepare(db, 'PRAGMA page_count').pluck().get() as number;
    const retention = new HistoryRetention({
      db,
      audit: new AuditLog(db),
      days: 30,
      clock: new TestClock(NOW),
      logger: silent,
    });
    expect((await retention.purge()).jobs).toBe(40);
    retention.stop();
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const after = prepare(db, 'PRAGMA page_count').pluck().get() as number;
    expect(prepare(db, 'PRAGMA freelist_count').pluck().get()).toBe(0);
    expect(after).toBeLessThan(full / 4);
    expect(statSync(file).size).toBe(after * (prepare(db, 'PRAGMA page_size').pluck().get() as number));
  });
});

describe('the service with --history-days', () => {
  it('purges at start and audits it', async () => {
    const file = tempFile();
    const db = openHistory(file);
    const history = new JobHistory(db);
    addJob(history, 'old', 8);
    addJob(history, 'recent', 6);
    db.close();
    const ns = `stores/retention${randomUUID().slice(0, 6)}`;
    const broker = await brokersByName.embedded.start(ns);
    const service = await startService(broker, ns, {
      db: file,
      clock: new TestClock(NOW),
      settings: { historyDays: 7 },
    });
    try {
      const token = await login(service.app);
      await until(
        async () =>
          (await api(service.app, token, 'GET', '/api/audit')).body.entries.some(
            (entry: { action: string }) => entry.action === 'history_purged',
          ),
        'the purge at start',
      );
      const jobs = await api(service.app, token, 'GET', '/api/jobs');
      expect(jobs.body.jobs.map((job: { jobId: string }) => job.jobId)).toEqual(['recent']);
    } finally {
      await service.stop();
      await broker.stop();
    }
  });
});

describe('history-backup', () => {
  it('copies a history in use, commits in the WAL included, and the copy opens as a history', async () => {
    const file = tempFile();
    const db = openHistory(file);
    const history = new JobHistory(db);
    addJob(history, 'j1', 1);
    addJob(history, 'j2', undefined);
    expect(existsSync(`${file}-wal`)).toBe(true);
    const copy = join(dirs[0]!, 'copy.db');
    expect(await backupHistory(file, copy)).toBeGreaterThan(0);
    addJob(history, 'after-backup', 1); // the live file goes on being written
    const restored = openHistory(copy);
    const again = new JobHistory(restored);
    expect(again.list(10)!.map((job) => job.jobId)).toEqual(['j2', 'j1']);
    expect(again.get('j1')!.results[0]).toMatchObject({ status: 'FINISHED', report: `${REPORT} j1` });
    expect(new ResultSearch(restored).page({ q: 'j1' }, 10).results).toHaveLength(3);
    await expect(backupHistory(file, copy)).rejects.toBeInstanceOf(BackupTargetExists);
  });

  it('regbridge history-backup copies the file and refuses to overwrite', async () => {
    const file = tempFile();
    const db = openHistory(file);
    addJob(new JobHistory(db), 'j1', 1);
    const copy = join(dirs[0]!, 'cli-copy.db');
    const done = await runCli(['history-backup', '--db', file, '--out', copy]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(new RegExp(`^copied ${file} to ${copy} \\(\\d+ pages\\)\\n$`));
    expect(new JobHistory(openHistory(copy)).get('j1')?.status).toBe('COMPLETED');
    const again = await runCli(['history-backup', '--db', file, '--out', copy]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('exists already');
    const missing = await runCli(['history-backup', '--db', file]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--out');
  });
});
