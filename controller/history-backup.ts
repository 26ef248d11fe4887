/**
 * An online copy of the history (docs/controller.md, "Retention and backup"): SQLite's backup
 * API through better-sqlite3, page by page from a read-only connection, while the controller
 * keeps running and writing (WAL readers never block the writer). The copy is a complete,
 * consistent history file: restoring is putting it in place of --db while the controller is stopped.
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';

/** Kept for the life of the process, as history-db.ts explains (`retained`). */
const retained: Database.Database[] = [];

export class BackupTargetExists extends Error {}

/** Copies `file` (which may be in use) to `target`, which must not exist yet; resolves with its pages. */
export async function backupHistory(file: string, target: string): Promise<number> {
  if (existsSync(target)) throw new BackupTargetExists(`${target} exists already: give a new file`);
  const db = new Database(file, { readonly: true, fileMustExist: true });
  retained.push(db);
  try {
    const { totalPages } = await db.backup(target);
    return totalPages;
  } finally {
    db.close();
  }
}
