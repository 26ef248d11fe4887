/**
 * The controller service's SQLite file (better-sqlite3): opening it and migrating its schema by
 * `user_version`, each migration in one transaction with its bump; a newer file is refused. WAL
 * with synchronous=NORMAL: a commit survives SIGKILL, which the resume relies on
 * (docs/controller.md, "History").
 */
import Database from 'better-sqlite3';
import { ownerOnlyFile } from './owner-only-file.ts';

export type HistoryDb = Database.Database;

/**
 * Every database and statement object this process made, held until exit: better-sqlite3 12
 * aborts the process on Node >= 24.19 when the collector frees one (fixed in 13, which needs Node
 * 22), while cleanup hooks at exit are safe. So pragmas that only set go through exec() and every
 * statement through prepare() below (docs/decisions/history-sqlite.md).
 */
const retained = new Set<object>();

/** db.prepare(), with the statement kept for the life of the process (see `retained`). */
export function prepare(db: HistoryDb, sql: string): Database.Statement {
  const statement = db.prepare(sql);
  retained.add(statement);
  return statement;
}

/** Migration N brings user_version from N-1 to N. Never edit a released one: add the next. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL UNIQUE,
    name TEXT,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    ended_at TEXT,
    status TEXT NOT NULL,
    script TEXT NOT NULL,
    target TEXT NOT NULL,
    rollout TEXT,
    abort_rule TEXT,
    deadline_at TEXT NOT NULL,
    idempotency_key TEXT UNIQUE,
    request_hash TEXT
  );
  CREATE INDEX jobs_by_status ON jobs(status);
  CREATE TABLE results (
    job_seq INTEGER NOT NULL REFERENCES jobs(seq),
    position INTEGER NOT NULL,
    device_id TEXT NOT NULL,
    status TEXT NOT NULL,
    task_id INTEGER,
    report TEXT,
    error TEXT,
    sent_at TEXT,
    ended_at TEXT,
    sent_boot TEXT,
    PRIMARY KEY (job_seq, position)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX results_by_device ON results(job_seq, device_id);
  CREATE TABLE audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    user TEXT,
    address TEXT,
    action TEXT NOT NULL,
    detail TEXT NOT NULL
  );
  `,
  // Version 2: retry, time and rollout control, schedules.
  `
  ALTER TABLE jobs ADD COLUMN retry TEXT;
  ALTER TABLE jobs ADD COLUMN start_at TEXT;
  ALTER TABLE jobs ADD COLUMN window TEXT;
  ALTER TABLE jobs ADD COLUMN end_at TEXT;
  ALTER TABLE jobs ADD COLUMN schedule_id TEXT;
  ALTER TABLE jobs ADD COLUMN rerun_of TEXT;
  ALTER TABLE jobs ADD COLUMN paused_reason TEXT;
  ALTER TABLE jobs ADD COLUMN open_wave INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE results ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE results ADD COLUMN next_attempt_at TEXT;
  UPDATE results SET attempts = 1 WHERE sent_at IS NOT NULL;
  CREATE TABLE schedules (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    cron TEXT NOT NULL,
    timezone TEXT NOT NULL,
    job TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    start_at TEXT,
    end_at TEXT,
    misfire_grace_ms INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_fire_at TEXT
  );
  `,
  // Version 3: the script library (versions never change), and jobs' library
  // script, parameters and approval decision.
  `
  CREATE TABLE scripts (
    script_id TEXT PRIMARY KEY,
    latest_version INTEGER NOT NULL,
    archived_at TEXT,
    archived_by TEXT
  );
  CREATE TABLE script_versions (
    script_id TEXT NOT NULL REFERENCES scripts(script_id),
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    body TEXT NOT NULL,
    params TEXT NOT NULL,
    requires_approval INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (script_id, version)
  ) WITHOUT ROWID;
  ALTER TABLE jobs ADD COLUMN script_ref TEXT;
  ALTER TABLE jobs ADD COLUMN decided_by TEXT;
  ALTER TABLE jobs ADD COLUMN decided_at TEXT;
  ALTER TABLE jobs ADD COLUMN decision_comment TEXT;
  `,
  // Version 4: search indexes chosen by EXPLAIN QUERY PLAN on a generated
  // history (docs/decisions/history-search.md); full-text search over reports and errors in a
  // contentless FTS5 table keyed by RESULT_ROWID (job_seq * 16384 + position, positions stay
  // below MAX_TARGET_DEVICES), kept in step by triggers; webhooks and their deliveries.
  `
  CREATE INDEX results_by_device_id ON results(device_id);
  CREATE INDEX results_by_status ON results(status);
  CREATE INDEX jobs_by_created_at ON jobs(created_at);
  CREATE VIRTUAL TABLE results_text USING fts5(report, error, content='', contentless_delete=1);
  INSERT INTO results_text(rowid, report, error)
    SELECT job_seq * 16384 + position, report, error FROM results WHERE report IS NOT NULL OR error IS NOT NULL;
  CREATE TRIGGER results_text_insert AFTER INSERT ON results
    WHEN new.report IS NOT NULL OR new.error IS NOT NULL BEGIN
      INSERT INTO results_text(rowid, report, error) VALUES (new.job_seq * 16384 + new.position, new.report, new.error);
    END;
  CREATE TRIGGER results_text_update AFTER UPDATE OF report, error ON results
    WHEN new.report IS NOT old.report OR new.error IS NOT old.error BEGIN
      DELETE FROM results_text WHERE rowid = old.job_seq * 16384 + old.position;
      INSERT INTO results_text(rowid, report, error)
        SELECT new.job_seq * 16384 + new.position, new.report, new.error
        WHERE new.report IS NOT NULL OR new.error IS NOT NULL;
    END;
  CREATE TRIGGER results_text_delete AFTER DELETE ON results BEGIN
      DELETE FROM results_text WHERE rowid = old.job_seq * 16384 + old.position;
    END;
  CREATE TABLE webhooks (
    webhook_id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE webhook_deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL REFERENCES webhooks(webhook_id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER,
    last_status INTEGER,
    last_error TEXT,
    last_attempt_at INTEGER
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at) WHERE next_at IS NOT NULL;
  CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, seq);
  `,
  // Version 5: a controller for many stores keys its registers by (store,
  // deviceId); '' is the store of a single-store controller's results (no NULLs: a UNIQUE index
  // treats every NULL as distinct).
  `
  ALTER TABLE results ADD COLUMN store TEXT NOT NULL DEFAULT '';
  DROP INDEX results_by_device;
  CREATE UNIQUE INDEX results_by_store_device ON results(job_seq, store, device_id);
  CREATE INDEX results_by_store ON results(store, device_id);
  `,
];

export class HistoryVersionError extends Error {
  constructor(file: string, found: number, known: number) {
    super(
      `${file} has schema version ${found}, newer than this regbridge knows (${known}): use a newer regbridge or another --db`,
    );
    this.name = 'HistoryVersionError';
  }
}

/** Opens (creating if needed) and migrates the history file; `:memory:` is a private in-RAM one. */
export function openHistory(file: string): HistoryDb {
  if (file !== ':memory:') ownerOnlyFile(file);
  const db = new Database(file);
  retained.add(db);
  try {
    // Only a new file takes it (before WAL writes its header): purges give pages back
    // (history-retention.ts); an older file reuses its freed pages instead.
    db.exec('PRAGMA auto_vacuum = INCREMENTAL');
    if (file !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
    // Two processes on one file (an operator starting a second controller) wait instead of failing at once.
    db.exec('PRAGMA busy_timeout = 5000');
    migrate(db, file);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

export function schemaVersion(db: HistoryDb): number {
  return prepare(db, 'PRAGMA user_version').pluck().get() as number;
}

function migrate(db: HistoryDb, file: string): void {
  const current = schemaVersion(db);
  if (current > MIGRATIONS.length) throw new HistoryVersionError(file, current, MIGRATIONS.length);
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version]!);
      db.exec(`PRAGMA user_version = ${version + 1}`);
    })();
  }
}
