/**
 * The history's WAL checkpoints in a worker thread (controller/wal-checkpointer.ts): while it
 * runs, the main connection never checkpoints (its commits only append to the WAL) and the
 * worker's own connection copies the WAL into the database file; stopped or failed, the main
 * connection checkpoints again as SQLite does by default. A real database file, a real thread.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type HistoryDb, openHistory, prepare } from '../../controller/history-db.ts';
import { type CheckpointResult, WalCheckpointer } from '../../controller/wal-checkpointer.ts';
import { silent } from '../support/loggers.ts';
import { onceEvent } from '../support/waits.ts';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempHistory(): { db: HistoryDb; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'regbridge-wal-'));
  const file = join(dir, 'history.db');
  const db = openHistory(file);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => {
    if (db.open) db.close();
  });
  return { db, file };
}

/** Enough audit rows to fill more than SQLite's 1,000-page default checkpoint threshold. */
function writeRows(db: HistoryDb, rows: number): void {
  const insert = prepare(db, 'INSERT INTO audit (at, action, detail) VALUES (?, ?, ?)');
  const detail = 'x'.repeat(4000);
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(new Date(0).toISOString(), 'test', detail);
  })();
}

function autocheckpoint(db: HistoryDb): number {
  return prepare(db, 'PRAGMA wal_autocheckpoint').pluck().get() as number;
}

describe('WAL checkpoints off the event loop', () => {
  it('the main connection only appends while the worker checkpoints the WAL into the file', async () => {
    const { db, file } = tempHistory();
    const checkpointer = new WalCheckpointer(db, file, silent, 20);
    cleanups.push(() => checkpointer.stop());
    checkpointer.start();
    expect(autocheckpoint(db)).toBe(0);

    // About 1,500 pages: with SQLite's default the commit itself would checkpoint (and fsync).
    writeRows(db, 1500);

    const [done] = await onceEvent<[CheckpointResult]>(checkpointer, 'checkpoint', 'a full checkpoint', {
      matches: (r) => r.log > 1000 && r.checkpointed === r.log,
    });
    expect(done.checkpointed).toBe(done.log);
    const count = prepare(db, 'SELECT count(*) FROM audit').pluck().get();
    expect(count).toBe(1500);

    await checkpointer.stop();
    expect(autocheckpoint(db)).toBe(1000);
  });

  it('a worker that fails hands the checkpoints back to the main connection', async () => {
    const { db, file } = tempHistory();
    const checkpointer = new WalCheckpointer(db, join(file, 'missing.db'), silent, 20);
    cleanups.push(() => checkpointer.stop());
    const failed = onceEvent<[Error]>(checkpointer, 'error', 'the worker failing');
    checkpointer.start();
    expect(autocheckpoint(db)).toBe(0);
    const [error] = await failed;
    expect(error.message).toMatch(/unable to open database file|directory does not exist|not a directory/i);
    expect(autocheckpoint(db)).toBe(1000);
  });

  it('an in-memory history has no WAL to checkpoint', () => {
    const db = openHistory(':memory:');
    cleanups.push(() => {
      db.close();
    });
    expect(() => new WalCheckpointer(db, ':memory:', silent)).toThrow(/in-memory/);
  });
});
