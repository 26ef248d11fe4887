/**
 * The controller service's audit trail in the SQLite history: who did what, from where (the
 * actions are AuditAction). Details are short human-readable text; passwords and tokens never
 * reach it.
 */
import type Database from 'better-sqlite3';
import { type HistoryDb, prepare } from './history-db.ts';

export type AuditAction =
  | 'login'
  | 'login_failed'
  | 'logout'
  | 'job_created'
  | 'job_cancelled'
  | 'job_aborted'
  | 'job_completed'
  | 'job_paused'
  | 'job_resumed'
  | 'schedule_created'
  | 'schedule_changed'
  | 'schedule_deleted'
  | 'schedule_missed'
  // Users and roles, the script library and approval (docs/controller.md).
  | 'forbidden'
  | 'out_of_scope'
  | 'users_reloaded'
  | 'script_created'
  | 'script_updated'
  | 'script_archived'
  | 'job_approved'
  | 'job_denied'
  | 'history_purged'
  | 'webhook_created'
  | 'webhook_deleted';

export interface AuditEntry {
  at: string;
  /** The user name (the one tried, for login_failed); `system` for the engine's own decisions. */
  user: string;
  /** The caller's socket address; empty for the engine's own decisions. */
  address: string;
  action: AuditAction;
  detail: string;
}

export interface AuditFilter {
  action?: string;
  user?: string;
  /** ISO-8601 UTC, as stored. */
  from?: string;
  to?: string;
}

/** Entries returned by one call at most. */
export const MAX_AUDIT_PAGE = 1000;

export class AuditLog {
  private readonly insertEntry;
  private readonly newest;
  private readonly listeners = new Set<(entry: AuditEntry) => void>();
  private readonly db: HistoryDb;
  /** One statement per combination of filters (at most 16: history-db.ts `retained`). */
  private readonly filtered = new Map<string, Database.Statement>();
  private failure: string | undefined;

  constructor(db: HistoryDb) {
    this.db = db;
    this.insertEntry = prepare(
      db,
      `INSERT INTO audit (at, user, address, action, detail) VALUES (@at, @user, @address, @action, @detail)`,
    );
    this.newest = prepare(
      db,
      `SELECT at, user, address, action, detail FROM audit ORDER BY seq DESC LIMIT ?`,
    );
  }

  record(entry: Omit<AuditEntry, 'at'> & { at?: string }): AuditEntry {
    const full: AuditEntry = { ...entry, at: entry.at ?? new Date().toISOString() };
    try {
      this.insertEntry.run(full);
      this.failure = undefined;
    } catch (error) {
      // What needs the trail (a login) fails; /health says so (docs/decisions/damaged-history-health.md).
      this.failure = (error as Error).message;
      throw error;
    }
    for (const listener of this.listeners) listener(full);
    return full;
  }

  /** Why the last write to the trail failed (a damaged page, a full disk); undefined once one succeeds. */
  get fault(): string | undefined {
    return this.failure;
  }

  /** Newest first, matching every filter given (`from` included, `to` excluded). */
  list(limit: number, filter: AuditFilter = {}): AuditEntry[] {
    const conditions: string[] = [];
    const params: unknown[] = [];
    for (const [key, sql] of [
      ['action', 'action = ?'],
      ['user', 'user = ?'],
      ['from', 'at >= ?'],
      ['to', 'at < ?'],
    ] as const) {
      if (filter[key] === undefined) continue;
      conditions.push(sql);
      params.push(filter[key]);
    }
    if (conditions.length === 0) return this.newest.all(Math.min(limit, MAX_AUDIT_PAGE)) as AuditEntry[];
    const sql = `SELECT at, user, address, action, detail FROM audit WHERE ${conditions.join(' AND ')}
      ORDER BY seq DESC LIMIT ?`;
    let statement = this.filtered.get(sql);
    if (!statement) {
      statement = prepare(this.db, sql);
      this.filtered.set(sql, statement);
    }
    return statement.all(...params, Math.min(limit, MAX_AUDIT_PAGE)) as AuditEntry[];
  }

  onEntry(listener: (entry: AuditEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
