/**
 * The controller service's SQLite history below the engine: the file's settings and migrations
 * (controller/history-db.ts), the rule that no statement becomes garbage (Node 24 aborts on
 * better-sqlite3 12's finalizers), and the write-behind of one event-loop turn
 * (controller/history-batch.ts): one transaction, announcements only after the commit.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HistoryBatch } from '../../controller/history-batch.ts';
import {
  HistoryVersionError,
  MIGRATIONS,
  openHistory,
  prepare,
  schemaVersion,
} from '../../controller/history-db.ts';
import { JobHistory, type StoredJob } from '../../controller/job-history.ts';
import { createLogger } from '../../src/logger.ts';
import { memoryLogger } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

const dirs: string[] = [];
function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-history-'));
  dirs.push(dir);
  return join(dir, 'history.db');
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function job(jobId: string, devices: string[]): StoredJob {
  const at = new Date(0).toISOString();
  return {
    jobId,
    createdBy: 'admin',
    createdAt: at,
    status: 'IN_PROGRESS',
    script: 'PRINT x',
    target: { devices },
    deadlineAt: at,
    results: devices.map((deviceId) => ({ deviceId, status: 'PENDING' as const })),
  };
}

describe('history file', () => {
  it('is WAL with synchronous=NORMAL and foreign keys, migrated to the last version, and reopens', () => {
    const file = tempFile();
    const db = openHistory(file);
    expect(prepare(db, 'PRAGMA journal_mode').pluck().get()).toBe('wal');
    expect(prepare(db, 'PRAGMA synchronous').pluck().get()).toBe(1); // NORMAL
    expect(prepare(db, 'PRAGMA foreign_keys').pluck().get()).toBe(1);
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
    new JobHistory(db).insert(job('j1', ['reg1']));
    db.close();
    const again = openHistory(file);
    expect(new JobHistory(again).get('j1')?.results).toEqual([
      { deviceId: 'reg1', status: 'PENDING', attempts: 0 },
    ]);
    again.close();
  });

  it('refuses a file of a newer schema version', () => {
    const file = tempFile();
    const db = openHistory(file);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => openHistory(file)).toThrow(HistoryVersionError);
  });

  it('controller code makes statements only through prepare() (none may become garbage on Node 24)', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith('.ts') && !path.endsWith('history-db.ts')) {
          const text = readFileSync(path, 'utf8');
          // The checkpoint worker (controller/wal-checkpointer.ts) has a connection of its own in
          // another thread: it prepares its one statement once, held until the thread exits.
          const own = path.endsWith('wal-checkpointer.ts')
            ? text.replace("checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');", '')
            : text;
          if (/\.pragma\(|\bdb\.prepare\(/.test(own)) offenders.push(path);
        }
      }
    };
    walk(join(import.meta.dirname, '..', '..', 'controller'));
    walk(join(import.meta.dirname, '..', '..', 'cli'));
    expect(offenders).toEqual([]);
  });
});

describe('HistoryBatch', () => {
  const logger = createLogger({ level: 'silent' });

  it("writes a window's results in one transaction and announces them after the commit, in order", async () => {
    const db = openHistory(':memory:');
    const history = new JobHistory(db);
    history.insert(job('j1', ['reg1', 'reg2']));
    const batch = new HistoryBatch(history, logger, 50);
    const seen: string[] = [];
    let transactions = 0;
    const transaction = history.transaction.bind(history);
    history.transaction = (changes) => {
      transactions += 1;
      transaction(changes);
    };
    const announced = new Promise<void>((resolve) => {
      batch.saveResult('j1', { deviceId: 'reg1', status: 'RUNNING', sentAt: 'a' });
      batch.afterCommit(() => seen.push(`reg1 ${history.get('j1')!.results[0]!.status}`));
      // Another turn, within the window: the same transaction.
      setImmediate(() => {
        batch.saveResult('j1', { deviceId: 'reg2', status: 'RUNNING', sentAt: 'b' });
        batch.afterCommit(() => {
          seen.push(`reg2 ${history.get('j1')!.results[1]!.status}`);
          resolve();
        });
      });
    });
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    // Nothing written nor announced two turns later: the window is still open.
    expect(history.get('j1')!.counts.running).toBe(0);
    expect(seen).toEqual([]);
    await announced;
    expect(transactions).toBe(1);
    expect(seen).toEqual(['reg1 RUNNING', 'reg2 RUNNING']);
    batch.stop();
    db.close();
  });

  it("a job's status is committed and announced at the end of the turn, with the results before it", async () => {
    const db = openHistory(':memory:');
    const history = new JobHistory(db);
    history.insert(job('j1', ['reg1']));
    const batch = new HistoryBatch(history, logger, 60_000);
    const seen: string[] = [];
    batch.saveResult('j1', { deviceId: 'reg1', status: 'FINISHED', taskId: 1, report: 'r', endedAt: 'c' });
    batch.saveStatus('j1', 'COMPLETED', 'c');
    batch.afterCommit(() =>
      seen.push(`${history.get('j1')!.status} ${history.get('j1')!.results[0]!.status}`),
    );
    expect(seen).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['COMPLETED FINISHED']);
    batch.stop();
    db.close();
  });

  it('flush() commits at once; a flush from a listener keeps the announcements in order', () => {
    const db = openHistory(':memory:');
    const history = new JobHistory(db);
    history.insert(job('j1', ['reg1']));
    const batch = new HistoryBatch(history, logger);
    const seen: string[] = [];
    batch.saveStatus('j1', 'CANCELLED', undefined);
    batch.afterCommit(() => {
      seen.push('first');
      // A listener's change, and a read that flushes it: announced after the outer ones.
      batch.saveResult('j1', { deviceId: 'reg1', status: 'CANCELLED', error: 'x' });
      batch.afterCommit(() => seen.push('third'));
      batch.flush();
      expect(history.get('j1')!.results[0]!.status).toBe('CANCELLED');
    });
    batch.afterCommit(() => seen.push('second'));
    batch.flush();
    expect(history.get('j1')!.status).toBe('CANCELLED');
    expect(seen).toEqual(['first', 'second', 'third']);
    db.close();
  });

  it('commitNow() commits at once and leaves the announcements for the end of the turn', async () => {
    const db = openHistory(':memory:');
    const history = new JobHistory(db);
    history.insert(job('j1', ['reg1']));
    const batch = new HistoryBatch(history, logger);
    const seen: string[] = [];
    batch.saveResult('j1', { deviceId: 'reg1', status: 'RUNNING', sentAt: 'a' });
    batch.afterCommit(() => seen.push('sent'));
    batch.commitNow();
    expect(history.get('j1')!.results[0]!.status).toBe('RUNNING');
    expect(seen).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['sent']);
    db.close();
  });

  it('a listener that throws does not keep the others from hearing', () => {
    const db = openHistory(':memory:');
    const history = new JobHistory(db);
    const batch = new HistoryBatch(history, logger);
    const seen: string[] = [];
    batch.afterCommit(() => {
      throw new Error('listener bug');
    });
    batch.afterCommit(() => seen.push('after'));
    batch.flush();
    expect(seen).toEqual(['after']);
    db.close();
  });

  it('writes the database refused are kept, written again later in order, then announced', async () => {
    const file = tempFile();
    const db = openHistory(file);
    // Refused at once instead of after the 5 s busy wait.
    db.exec('PRAGMA busy_timeout = 0');
    const history = new JobHistory(db);
    history.insert(job('j1', ['reg1']));
    const { logger: errorLog, lines } = memoryLogger('error');
    const batch = new HistoryBatch(history, errorLog, 10);
    // Another connection holds the file's write lock: every commit is refused with SQLITE_BUSY.
    const other = openHistory(file);
    other.exec('BEGIN IMMEDIATE');
    const seen: string[] = [];
    batch.saveResult('j1', { deviceId: 'reg1', status: 'RUNNING', sentAt: 'a' });
    batch.saveResult('j1', { deviceId: 'reg1', status: 'FINISHED', sentAt: 'a', taskId: 7, report: 'ok' });
    batch.saveStatus('j1', 'COMPLETED', 'e');
    batch.afterCommit(() => seen.push(`announced ${history.get('j1')!.status}`));
    await until(() => lines.length > 0, 'the refusal logged');
    expect(lines[0]).toMatchObject({
      msg: 'writing the job history failed; writing it again later',
      code: 'SQLITE_BUSY',
      pending: 3,
      retryInMs: 1000,
    });
    // A read neither fails nor tries again: it sees what is committed, all that was announced.
    batch.flushForRead();
    expect(lines).toHaveLength(1);
    expect(history.get('j1')).toMatchObject({ status: 'IN_PROGRESS', results: [{ status: 'PENDING' }] });
    // A flush that a caller waits for (a job's creation, a cancel) throws, and keeps the writes too.
    expect(() => batch.flush()).toThrow(/locked|busy/i);
    expect(lines[1]).toMatchObject({ pending: 3, retryInMs: 2000 });
    expect(seen).toEqual([]);
    other.exec('COMMIT');
    other.close();
    await until(() => seen.length > 0, 'the job announced once written', 5000);
    expect(seen).toEqual(['announced COMPLETED']);
    expect(history.get('j1')).toMatchObject({
      status: 'COMPLETED',
      results: [{ deviceId: 'reg1', status: 'FINISHED', taskId: 7, report: 'ok' }],
    });
    batch.stop();
    db.close();
  });

  it('a write that cannot pass (the database closed) is dropped with an error, not retried', () => {
    const db = openHistory(':memory:');
    const history = new JobHistory(db);
    history.insert(job('j1', ['reg1']));
    const { logger: errorLog, lines } = memoryLogger('error');
    const batch = new HistoryBatch(history, errorLog, 10);
    db.close();
    batch.saveResult('j1', { deviceId: 'reg1', status: 'RUNNING', sentAt: 'a' });
    expect(() => batch.flush()).toThrow(/not open/);
    expect(lines).toEqual([expect.objectContaining({ msg: 'writing the job history failed', dropped: 1 })]);
    // Nothing is left to retry: the next flush has nothing to write.
    expect(() => batch.flush()).not.toThrow();
    batch.stop();
  });
});
