/**
 * The script library (docs/controller.md, "Script library") in the SQLite history: scripts with
 * typed parameters, each save a new version (versions are never changed or deleted), archived
 * instead of deleted so jobs keep their version. Speaks its domain; REST translates.
 */
import { randomUUID } from 'node:crypto';
import { type HistoryDb, prepare } from './history-db.ts';
import type { ParamSpec } from './script-render.ts';

export interface ScriptDraft {
  name: string;
  description?: string | undefined;
  body: string;
  params?: ParamSpec[] | undefined;
  requiresApproval?: boolean | undefined;
}

export interface LibraryScript {
  scriptId: string;
  version: number;
  name: string;
  description?: string;
  body: string;
  params: ParamSpec[];
  requiresApproval: boolean;
  createdBy: string;
  createdAt: string;
  /** The latest version, on reads of an older one. */
  latestVersion: number;
  archived: boolean;
  archivedAt?: string;
}

interface VersionRow {
  script_id: string;
  version: number;
  name: string;
  description: string | null;
  body: string;
  params: string;
  requires_approval: number;
  created_by: string;
  created_at: string;
  latest_version: number;
  archived_at: string | null;
}

function toScript(row: VersionRow): LibraryScript {
  return {
    scriptId: row.script_id,
    version: row.version,
    name: row.name,
    ...(row.description !== null && { description: row.description }),
    body: row.body,
    params: JSON.parse(row.params) as ParamSpec[],
    requiresApproval: row.requires_approval === 1,
    createdBy: row.created_by,
    createdAt: row.created_at,
    latestVersion: row.latest_version,
    archived: row.archived_at !== null,
    ...(row.archived_at !== null && { archivedAt: row.archived_at }),
  };
}

const SELECT = `SELECT v.*, s.latest_version, s.archived_at FROM script_versions v
  JOIN scripts s ON s.script_id = v.script_id`;

export class ScriptLibrary {
  private readonly db: HistoryDb;
  private readonly statements;

  constructor(db: HistoryDb) {
    this.db = db;
    this.statements = {
      insertScript: prepare(db, `INSERT INTO scripts (script_id, latest_version) VALUES (?, 1)`),
      bump: prepare(db, `UPDATE scripts SET latest_version = ? WHERE script_id = ?`),
      insertVersion: prepare(
        db,
        `INSERT INTO script_versions (script_id, version, name, description, body, params, requires_approval,
           created_by, created_at) VALUES (@scriptId, @version, @name, @description, @body, @params,
           @requiresApproval, @createdBy, @createdAt)`,
      ),
      archive: prepare(
        db,
        `UPDATE scripts SET archived_at = ?, archived_by = ? WHERE script_id = ? AND archived_at IS NULL`,
      ),
      latest: prepare(db, `${SELECT} WHERE v.script_id = ? AND v.version = s.latest_version`),
      version: prepare(db, `${SELECT} WHERE v.script_id = ? AND v.version = ?`),
      versions: prepare(db, `${SELECT} WHERE v.script_id = ? ORDER BY v.version DESC`),
      newest: prepare(
        db,
        `${SELECT} WHERE v.version = s.latest_version AND (? OR s.archived_at IS NULL)
           AND (? IS NULL OR s.rowid < (SELECT rowid FROM scripts WHERE script_id = ?))
         ORDER BY s.rowid DESC LIMIT ?`,
      ),
    };
  }

  create(draft: ScriptDraft, user: string): LibraryScript {
    const scriptId = randomUUID();
    this.db.transaction(() => {
      this.statements.insertScript.run(scriptId);
      this.insertVersion(scriptId, 1, draft, user);
    })();
    return this.get(scriptId)!;
  }

  /** A new version; undefined when the script does not exist, 'archived' when it is archived. */
  update(scriptId: string, draft: ScriptDraft, user: string): LibraryScript | 'archived' | undefined {
    const current = this.get(scriptId);
    if (!current) return undefined;
    if (current.archived) return 'archived';
    const version = current.latestVersion + 1;
    this.db.transaction(() => {
      this.insertVersion(scriptId, version, draft, user);
      this.statements.bump.run(version, scriptId);
    })();
    return this.get(scriptId)!;
  }

  /** Archives; undefined when unknown. Archiving twice answers the script as it is. */
  archive(scriptId: string, user: string): LibraryScript | undefined {
    if (!this.get(scriptId)) return undefined;
    this.statements.archive.run(new Date().toISOString(), user, scriptId);
    return this.get(scriptId);
  }

  /** The latest version, or the one asked for. */
  get(scriptId: string, version?: number): LibraryScript | undefined {
    const row =
      version === undefined
        ? this.statements.latest.get(scriptId)
        : this.statements.version.get(scriptId, version);
    return row ? toScript(row as VersionRow) : undefined;
  }

  versions(scriptId: string): LibraryScript[] {
    return (this.statements.versions.all(scriptId) as VersionRow[]).map(toScript);
  }

  /** Latest versions, newest script first; `before` a scriptId. undefined: unknown `before`. */
  list(limit: number, options: { before?: string; archived?: boolean } = {}): LibraryScript[] | undefined {
    if (options.before !== undefined && !this.get(options.before)) return undefined;
    const before = options.before ?? null;
    return (this.statements.newest.all(options.archived ? 1 : 0, before, before, limit) as VersionRow[]).map(
      toScript,
    );
  }

  private insertVersion(scriptId: string, version: number, draft: ScriptDraft, user: string): void {
    this.statements.insertVersion.run({
      scriptId,
      version,
      name: draft.name,
      description: draft.description ?? null,
      body: draft.body,
      params: JSON.stringify(draft.params ?? []),
      requiresApproval: draft.requiresApproval ? 1 : 0,
      createdBy: user,
      createdAt: new Date().toISOString(),
    });
  }
}
