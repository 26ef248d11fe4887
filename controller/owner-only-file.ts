/**
 * The history file readable by its owner only (docs/security.md, "Files"): it holds every job's
 * scripts and reports and the audit trail. The file is created 0600 before SQLite opens it, and
 * SQLite creates the -wal and -shm files with the database file's permissions; a file left
 * readable by an older version (and its -wal, -shm) is narrowed to 0600.
 */
import { chmodSync, closeSync, openSync, statSync } from 'node:fs';

const OWNER_ONLY = 0o600;

export function ownerOnlyFile(file: string): void {
  closeSync(openSync(file, 'a', OWNER_ONLY));
  for (const each of [file, `${file}-wal`, `${file}-shm`]) {
    let mode: number;
    try {
      mode = statSync(each).mode;
    } catch {
      continue; // not there (yet): SQLite creates it with the database's mode
    }
    if ((mode & 0o077) !== 0) chmodSync(each, OWNER_ONLY);
  }
}
