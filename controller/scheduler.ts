/**
 * Schedules (contract 7.4; docs/controller.md, "Schedules"): a job at every cron match in the
 * schedule's IANA time zone (croner). A restarted controller catches up in order: a missed run at
 * most misfireGraceMs late runs once, others are recorded as missed. Each run's job carries an
 * idempotency key (schedule, fire time) written in one transaction, so nothing runs twice.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger } from '../src/logger.ts';
import type { AuditLog } from './audit-log.ts';
import type { Caller, CreateOutcome, JobEngine } from './job-engine.ts';
import type { JobSpec } from './job-types.ts';
import { cronOf } from './job-window.ts';
import type { PacingClock } from './rollout.ts';
import type { ScheduleStore, StoredSchedule } from './schedule-store.ts';

export const DEFAULT_MISFIRE_GRACE_MS = 3_600_000;
/** Missed runs recorded one by one after a long downtime; beyond, one entry counts the rest. */
const MAX_MISSED_ENTRIES = 20;
/** Fire times looked at per schedule and wake-up (a cron every minute down for a week: 10,080). */
const MAX_FIRES_PER_TICK = 100_000;

export interface ScheduleInput {
  name: string;
  cron: string;
  timezone: string;
  job: JobSpec;
  enabled?: boolean;
  startAt?: string;
  endAt?: string;
  misfireGraceMs?: number;
}

export interface Schedule extends StoredSchedule {
  /** The next run (null: none any more, past endAt, or disabled). */
  nextRunAt: string | null;
  /** The next runs (up to 5), for the dashboard to show in the store's time. */
  nextRuns: string[];
}

export interface MissedRun {
  scheduleId: string;
  name: string;
  fireAt: string;
  lateMs: number;
}

export interface SchedulerEvents {
  missed: [run: MissedRun];
  changed: [schedule: Schedule];
}

export interface SchedulerOptions {
  store: ScheduleStore;
  engine: JobEngine;
  audit: AuditLog;
  clock: PacingClock;
  logger: Logger;
}

export type RunOutcome = { kind: 'unknown' } | { kind: 'ran'; outcome: CreateOutcome };

export class Scheduler extends EventEmitter<SchedulerEvents> {
  private readonly options: SchedulerOptions;
  private readonly timers = new Map<string, unknown>();
  private started = false;

  constructor(options: SchedulerOptions) {
    super();
    this.options = options;
  }

  /** After the engine started: catches up on every schedule, then waits for the next runs. */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const schedule of this.options.store.all()) this.tick(schedule);
  }

  stop(): void {
    this.started = false;
    for (const handle of this.timers.values()) this.options.clock.clearTimeout(handle);
    this.timers.clear();
  }

  create(input: ScheduleInput, caller: Caller): Schedule {
    const now = this.options.clock.now();
    const schedule: StoredSchedule = {
      scheduleId: randomUUID(),
      name: input.name,
      cron: input.cron,
      timezone: input.timezone,
      job: input.job,
      enabled: input.enabled ?? true,
      ...(input.startAt !== undefined && { startAt: new Date(input.startAt).toISOString() }),
      ...(input.endAt !== undefined && { endAt: new Date(input.endAt).toISOString() }),
      misfireGraceMs: input.misfireGraceMs ?? DEFAULT_MISFIRE_GRACE_MS,
      createdBy: caller.user,
      createdAt: new Date(now).toISOString(),
      // Runs are counted from its creation: none before it is "missed".
      lastFireAt: new Date(now).toISOString(),
    };
    this.options.store.insert(schedule);
    this.audit(
      caller,
      'schedule_created',
      `schedule ${schedule.scheduleId} "${schedule.name}" (${schedule.cron} ${schedule.timezone})`,
    );
    this.arm(schedule);
    return this.view(schedule);
  }

  /** undefined: no such schedule. */
  update(scheduleId: string, changes: Partial<ScheduleInput>, caller: Caller): Schedule | undefined {
    const current = this.options.store.get(scheduleId);
    if (!current) return undefined;
    const next: StoredSchedule = { ...current };
    for (const [key, value] of Object.entries(changes)) {
      if (value !== undefined) (next as unknown as Record<string, unknown>)[key] = value;
    }
    // Enabled again (or moved): runs are counted from now, the time it was off is not "missed".
    if (changes.enabled === true && !current.enabled)
      next.lastFireAt = new Date(this.options.clock.now()).toISOString();
    this.options.store.save(next);
    this.audit(caller, 'schedule_changed', `schedule ${scheduleId}: ${Object.keys(changes).join(', ')}`);
    this.arm(next);
    return this.view(next);
  }

  remove(scheduleId: string, caller: Caller): Schedule | undefined {
    const current = this.options.store.get(scheduleId);
    if (!current) return undefined;
    this.disarm(scheduleId);
    this.options.store.remove(scheduleId);
    this.audit(caller, 'schedule_deleted', `schedule ${scheduleId} "${current.name}"`);
    return this.view(current);
  }

  get(scheduleId: string): Schedule | undefined {
    const schedule = this.options.store.get(scheduleId);
    return schedule ? this.view(schedule) : undefined;
  }

  list(limit: number, before?: string): Schedule[] | undefined {
    return this.options.store.list(limit, before)?.map((schedule) => this.view(schedule));
  }

  /** Run now: a job of the schedule, whatever its cron says (enabled or not). */
  runNow(scheduleId: string, caller: Caller): RunOutcome {
    const schedule = this.options.store.get(scheduleId);
    if (!schedule) return { kind: 'unknown' };
    return {
      kind: 'ran',
      outcome: this.options.engine.create(schedule.job, caller, undefined, { scheduleId }),
    };
  }

  /** The schedule as the API shows it, with its next runs from now. */
  view(schedule: StoredSchedule): Schedule {
    const nextRuns = this.enabledFires(schedule, this.options.clock.now(), 5).map((at) =>
      new Date(at).toISOString(),
    );
    return { ...schedule, nextRunAt: nextRuns[0] ?? null, nextRuns };
  }

  /** Up to `count` fire times after `from` and at most `until`, within startAt/endAt (none when disabled). */
  private enabledFires(
    schedule: StoredSchedule,
    from: number,
    count: number,
    until = Number.POSITIVE_INFINITY,
  ): number[] {
    if (!schedule.enabled) return [];
    const cron = cronOf(schedule.cron, schedule.timezone);
    const startAt = schedule.startAt !== undefined ? Date.parse(schedule.startAt) : Number.NEGATIVE_INFINITY;
    const endAt = Math.min(
      until,
      schedule.endAt !== undefined ? Date.parse(schedule.endAt) : Number.POSITIVE_INFINITY,
    );
    // From just before startAt, so a run at startAt itself counts.
    let at = Math.max(from, startAt - 1);
    const fires: number[] = [];
    while (fires.length < count) {
      const next = cron.nextRun(new Date(at));
      if (!next || next.getTime() > endAt) break;
      at = next.getTime();
      fires.push(at);
    }
    return fires;
  }

  /** Handles every fire time due since the last one handled, then waits for the next. */
  private tick(schedule: StoredSchedule): void {
    const now = this.options.clock.now();
    const from = Date.parse(schedule.lastFireAt ?? schedule.createdAt);
    const due = this.enabledFires(schedule, from, MAX_FIRES_PER_TICK, now);
    if (due.length > 0) {
      const last = due[due.length - 1]!;
      const missed = due.slice(0, -1);
      if (now - last <= schedule.misfireGraceMs) this.fire(schedule, last, now);
      else missed.push(last);
      this.recordMissed(schedule, missed, now);
      schedule.lastFireAt = new Date(last).toISOString();
      this.options.store.save(schedule);
    }
    this.arm(schedule);
  }

  private fire(schedule: StoredSchedule, at: number, now: number): void {
    const fireAt = new Date(at).toISOString();
    const caller = { user: schedule.createdBy, address: '' };
    try {
      const outcome = this.options.engine.create(
        schedule.job,
        caller,
        `schedule:${schedule.scheduleId}:${fireAt}`,
        {
          scheduleId: schedule.scheduleId,
        },
      );
      this.options.logger.info(
        { scheduleId: schedule.scheduleId, fireAt, lateMs: now - at, outcome: outcome.kind },
        'schedule ran',
      );
      if (outcome.kind === 'noTarget') {
        this.audit(
          caller,
          'schedule_missed',
          `schedule ${schedule.scheduleId} at ${fireAt}: ${outcome.message}`,
        );
      }
    } catch (error) {
      this.options.logger.error(
        { err: error, scheduleId: schedule.scheduleId, fireAt },
        'schedule run failed',
      );
    }
  }

  private recordMissed(schedule: StoredSchedule, fires: readonly number[], now: number): void {
    const caller = { user: 'system', address: '' };
    fires.slice(-MAX_MISSED_ENTRIES).forEach((at) => {
      const fireAt = new Date(at).toISOString();
      const run = { scheduleId: schedule.scheduleId, name: schedule.name, fireAt, lateMs: now - at };
      this.audit(
        caller,
        'schedule_missed',
        `schedule ${schedule.scheduleId} "${schedule.name}" at ${fireAt}: ${Math.round(run.lateMs / 1000)} s late, more than its misfire grace`,
      );
      this.emit('missed', run);
    });
    if (fires.length > MAX_MISSED_ENTRIES) {
      this.audit(
        caller,
        'schedule_missed',
        `schedule ${schedule.scheduleId}: ${fires.length - MAX_MISSED_ENTRIES} more runs missed before`,
      );
    }
  }

  private arm(schedule: StoredSchedule): void {
    this.disarm(schedule.scheduleId);
    if (!this.started) return;
    const now = this.options.clock.now();
    const [next] = this.enabledFires(
      schedule,
      Math.max(now, Date.parse(schedule.lastFireAt ?? schedule.createdAt)),
      1,
    );
    if (next === undefined) return;
    const handle = this.options.clock.setTimeout(
      () => {
        this.timers.delete(schedule.scheduleId);
        const current = this.options.store.get(schedule.scheduleId);
        if (current) this.tick(current);
      },
      // Long waits are armed again when they fire (setTimeout's limit is ~24.8 days).
      Math.min(2 ** 31 - 1, Math.max(0, next - now)),
    );
    this.timers.set(schedule.scheduleId, handle);
  }

  private disarm(scheduleId: string): void {
    const handle = this.timers.get(scheduleId);
    if (handle !== undefined) this.options.clock.clearTimeout(handle);
    this.timers.delete(scheduleId);
  }

  private audit(
    caller: Caller,
    action: 'schedule_created' | 'schedule_changed' | 'schedule_deleted' | 'schedule_missed',
    detail: string,
  ): void {
    this.options.audit.record({ ...caller, action, detail });
  }
}
