/**
 * Schedules in the SQLite history (contract 7.4; docs/controller.md, "Schedules"): what an admin
 * set up, and the last fire time handled, from which a restarted controller catches up.
 */
import { type HistoryDb, prepare } from './history-db.ts';
import type { JobSpec } from './job-types.ts';

export interface StoredSchedule {
  scheduleId: string;
  name: string;
  cron: string;
  timezone: string;
  /** A job body without startAt. */
  job: JobSpec;
  enabled: boolean;
  startAt?: string;
  endAt?: string;
  misfireGraceMs: number;
  createdBy: string;
  createdAt: string;
  /** The last fire time handled (run or recorded missed). */
  lastFireAt?: string;
}

interface Row {
  schedule_id: string;
  name: string;
  cron: string;
  timezone: string;
  job: string;
  enabled: number;
  start_at: string | null;
  end_at: string | null;
  misfire_grace_ms: number;
  created_by: string;
  created_at: string;
  last_fire_at: string | null;
}

function toSchedule(row: Row): StoredSchedule {
  return {
    scheduleId: row.schedule_id,
    name: row.name,
    cron: row.cron,
    timezone: row.timezone,
    job: JSON.parse(row.job) as JobSpec,
    enabled: row.enabled === 1,
    ...(row.start_at !== null && { startAt: row.start_at }),
    ...(row.end_at !== null && { endAt: row.end_at }),
    misfireGraceMs: row.misfire_grace_ms,
    createdBy: row.created_by,
    createdAt: row.created_at,
    ...(row.last_fire_at !== null && { lastFireAt: row.last_fire_at }),
  };
}

export class ScheduleStore {
  private readonly statements;

  constructor(db: HistoryDb) {
    this.statements = {
      insert: prepare(
        db,
        `INSERT INTO schedules (schedule_id, name, cron, timezone, job, enabled, start_at, end_at,
           misfire_grace_ms, created_by, created_at, last_fire_at)
         VALUES (@scheduleId, @name, @cron, @timezone, @job, @enabled, @startAt, @endAt,
           @misfireGraceMs, @createdBy, @createdAt, @lastFireAt)`,
      ),
      update: prepare(
        db,
        `UPDATE schedules SET name = @name, cron = @cron, timezone = @timezone, job = @job, enabled = @enabled,
           start_at = @startAt, end_at = @endAt, misfire_grace_ms = @misfireGraceMs, last_fire_at = @lastFireAt
         WHERE schedule_id = @scheduleId`,
      ),
      remove: prepare(db, `DELETE FROM schedules WHERE schedule_id = ?`),
      byId: prepare(db, `SELECT * FROM schedules WHERE schedule_id = ?`),
      seqOf: prepare(db, `SELECT seq FROM schedules WHERE schedule_id = ?`).pluck(),
      newest: prepare(db, `SELECT * FROM schedules ORDER BY seq DESC LIMIT ?`),
      newestBefore: prepare(db, `SELECT * FROM schedules WHERE seq < ? ORDER BY seq DESC LIMIT ?`),
      all: prepare(db, `SELECT * FROM schedules ORDER BY seq`),
    };
  }

  private params(schedule: StoredSchedule): Record<string, unknown> {
    return {
      scheduleId: schedule.scheduleId,
      name: schedule.name,
      cron: schedule.cron,
      timezone: schedule.timezone,
      job: JSON.stringify(schedule.job),
      enabled: schedule.enabled ? 1 : 0,
      startAt: schedule.startAt ?? null,
      endAt: schedule.endAt ?? null,
      misfireGraceMs: schedule.misfireGraceMs,
      createdBy: schedule.createdBy,
      createdAt: schedule.createdAt,
      lastFireAt: schedule.lastFireAt ?? null,
    };
  }

  insert(schedule: StoredSchedule): void {
    this.statements.insert.run(this.params(schedule));
  }

  save(schedule: StoredSchedule): void {
    this.statements.update.run(this.params(schedule));
  }

  remove(scheduleId: string): void {
    this.statements.remove.run(scheduleId);
  }

  get(scheduleId: string): StoredSchedule | undefined {
    const row = this.statements.byId.get(scheduleId) as Row | undefined;
    return row ? toSchedule(row) : undefined;
  }

  all(): StoredSchedule[] {
    return (this.statements.all.all() as Row[]).map(toSchedule);
  }

  /** Newest first; undefined: `before` names no schedule. */
  list(limit: number, before?: string): StoredSchedule[] | undefined {
    if (before === undefined) return (this.statements.newest.all(limit) as Row[]).map(toSchedule);
    const seq = this.statements.seqOf.get(before) as number | undefined;
    if (seq === undefined) return undefined;
    return (this.statements.newestBefore.all(seq, limit) as Row[]).map(toSchedule);
  }
}
