/**
 * The controller service's audit trail, in the SQLite history: who did what, from where.
 * Actions: `login`, `login_failed`, `job_created`, `job_cancelled`, `job_aborted` (the engine,
 * user `system`), `job_completed`. Details are short human-readable text; passwords and tokens
 * never reach it.
 */
import { type HistoryDb, prepare } from './history-db.ts';

export type AuditAction =
  | 'login'
  | 'login_failed'
  | 'job_created'
  | 'job_cancelled'
  | 'job_aborted'
  | 'job_completed';

export interface AuditEntry {
  at: string;
  /** The user name (the one tried, for login_failed); `system` for the engine's own decisions. */
  user: string;
  /** The caller's socket address; empty for the engine's own decisions. */
  address: string;
  action: AuditAction;
  detail: string;
}

/** Entries returned by one call at most. */
export const MAX_AUDIT_PAGE = 1000;

export class AuditLog {
  private readonly insertEntry;
  private readonly newest;
  private readonly listeners = new Set<(entry: AuditEntry) => void>();
  private failure: string | undefined;

  constructor(db: HistoryDb) {
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

  /** Newest first. */
  list(limit: number): AuditEntry[] {
    return this.newest.all(Math.min(limit, MAX_AUDIT_PAGE)) as AuditEntry[];
  }

  onEntry(listener: (entry: AuditEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
