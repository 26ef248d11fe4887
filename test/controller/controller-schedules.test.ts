/**
 * Schedules of the controller service: the API (create, list, read, change, delete, run now) on a
 * real service with a real register, firing on a clock the test moves; and the scheduler's
 * rules on its own, with a recording engine and a real history file: exactly once per matching
 * local time across daylight-saving changes (Europe/Berlin, America/New_York, spring and
 * autumn), and after downtime a run at most misfireGraceMs late runs once, an older one is
 * recorded as missed.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { AuditLog } from '../../controller/audit-log.ts';
import { openHistory } from '../../controller/history-db.ts';
import type { JobEngine } from '../../controller/job-engine.ts';
import type { Job, JobSpec } from '../../controller/job-types.ts';
import { ScheduleStore } from '../../controller/schedule-store.ts';
import { type MissedRun, Scheduler } from '../../controller/scheduler.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { silent } from '../support/loggers.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { until } from '../support/waits.ts';

const JOB = { script: 'Z REPORT', target: { group: 'tills' } };

describe('schedules API', () => {
  const ns = `stores/sched${randomUUID().slice(0, 6)}`;
  const clock = new ManualClock();
  let broker: RunningBroker;
  let service: RunningControllerService;
  let token: string;
  let device: RunningDevice;

  beforeAll(async () => {
    broker = await brokersByName.embedded.start(ns);
    device = await startRealDevice(broker, ns, 'till1', { groups: ['tills'] });
    service = await startService(broker, ns, { clock });
    await until(() => service.controller.device('till1')?.online === true, 'till1 online');
    token = await login(service.app);
  });

  afterAll(async () => {
    await service?.stop();
    await device?.stop();
    await broker?.stop();
  });

  it('creates, lists, changes and deletes a schedule; nextRunAt is always shown', async () => {
    const created = await api(service.app, token, 'POST', '/api/schedules', {
      name: 'Nightly Z report',
      cron: '0 22 * * *',
      timezone: 'Europe/Berlin',
      job: { ...JOB, script: 'PRINT Z' },
    });
    expect(created.statusCode).toBe(201);
    const { scheduleId, nextRunAt, nextRuns } = created.body;
    expect(created.headers.location).toBe(`/api/schedules/${scheduleId}`);
    expect(created.body).toMatchObject({ enabled: true, misfireGraceMs: 3_600_000, createdBy: 'admin' });
    // 22:00 in Berlin is 21:00 UTC in winter.
    expect(nextRunAt).toMatch(/T21:00:00\.000Z$/);
    expect(nextRuns).toHaveLength(5);
    const list = await api(service.app, token, 'GET', '/api/schedules?limit=10');
    expect(list.body.schedules.map((s: { scheduleId: string }) => s.scheduleId)).toContain(scheduleId);
    const unknownParam = await api(service.app, token, 'GET', '/api/schedules?colour=red');
    expect(unknownParam.statusCode).toBe(400);
    expect(unknownParam.body.code).toBe('INVALID_REQUEST');
    const off = await api(service.app, token, 'PATCH', `/api/schedules/${scheduleId}`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, nextRunAt: null, nextRuns: [] });
    const badZone = await api(service.app, token, 'PATCH', `/api/schedules/${scheduleId}`, {
      timezone: 'Moon/Base',
    });
    expect(badZone.statusCode).toBe(400);
    const removed = await api(service.app, token, 'DELETE', `/api/schedules/${scheduleId}`);
    expect(removed.statusCode).toBe(200);
    const gone = await api(service.app, token, 'GET', `/api/schedules/${scheduleId}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.body).toMatchObject({ code: 'SCHEDULE_DOES_NOT_EXIST', scheduleId });
    const audit = await api(service.app, token, 'GET', '/api/audit?limit=10');
    const actions = audit.body.entries.map((e: { action: string }) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining(['schedule_created', 'schedule_changed', 'schedule_deleted']),
    );
  });

  it('refuses a job with startAt, an unknown time zone and a six-field cron', async () => {
    for (const body of [
      { name: 'x', cron: '0 22 * * *', timezone: 'UTC', job: { ...JOB, startAt: new Date().toISOString() } },
      { name: 'x', cron: '0 22 * * *', timezone: 'Europe/Atlantis', job: JOB },
      { name: 'x', cron: '0 0 22 * * *', timezone: 'UTC', job: JOB },
    ]) {
      const answer = await api(service.app, token, 'POST', '/api/schedules', body);
      expect(answer.statusCode, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body.code).toBe('INVALID_REQUEST');
    }
  });

  it('fires at its time on the injected clock, once a night, each job carrying its scheduleId; run now too', async () => {
    const created = await api(service.app, token, 'POST', '/api/schedules', {
      name: 'Closing',
      cron: '30 21 * * *',
      timezone: 'Europe/Berlin',
      job: { ...JOB, script: 'PRINT closing' },
    });
    const { scheduleId, nextRunAt } = created.body;
    const jobsOf = async (): Promise<Job[]> =>
      ((await api(service.app, token, 'GET', '/api/jobs?limit=100')).body.jobs as Job[]).filter(
        (j) => j.scheduleId === scheduleId,
      );
    clock.advanceTo(Date.parse(nextRunAt) - 1);
    expect(await jobsOf()).toEqual([]);
    clock.advanceTo(Date.parse(nextRunAt));
    const [first] = await jobsOf();
    expect(first).toMatchObject({ scheduleId, createdBy: 'admin', script: 'PRINT closing' });
    await waitForJob(service, token, first!.jobId, ended, 'first night');
    clock.advanceTo(Date.parse(nextRunAt) + 24 * 3_600_000);
    expect(await jobsOf()).toHaveLength(2);
    const now = await api(service.app, token, 'POST', `/api/schedules/${scheduleId}/run`);
    expect(now.statusCode).toBe(201);
    expect(now.body.scheduleId).toBe(scheduleId);
    expect(await jobsOf()).toHaveLength(3);
    for (const job of await jobsOf()) await waitForJob(service, token, job.jobId, ended, 'job end');
    const unknown = await api(service.app, token, 'POST', '/api/schedules/nope/run');
    expect(unknown.statusCode).toBe(404);
  });
});

/** The scheduler with an engine that records what it is asked to create. */
function recordingScheduler(file: string, clock: ManualClock) {
  const db = openHistory(file);
  const runs: { key: string | undefined; scheduleId: string | undefined }[] = [];
  const keys = new Set<string>();
  const engine = {
    create(_spec: JobSpec, _caller: unknown, key: string | undefined, origin: { scheduleId?: string }) {
      // As the engine does: a key seen before replays the first job instead of creating one.
      if (key !== undefined && keys.has(key)) return { kind: 'replayed' };
      if (key !== undefined) keys.add(key);
      runs.push({ key, scheduleId: origin.scheduleId });
      return { kind: 'created' };
    },
  } as unknown as JobEngine;
  const audit = new AuditLog(db);
  const scheduler = new Scheduler({ store: new ScheduleStore(db), engine, audit, clock, logger: silent });
  const missed: MissedRun[] = [];
  scheduler.on('missed', (run) => missed.push(run));
  scheduler.start();
  return { db, scheduler, runs, audit, missed };
}

const fireTimes = (runs: { key: string | undefined }[]) =>
  runs.map((r) => r.key!.split(':').slice(2).join(':'));

describe('scheduler across daylight-saving changes', () => {
  const cases = [
    // Spring: 02:30 does not exist; it runs at the first valid instant after it (03:00 local).
    [
      'Europe/Berlin',
      '30 2 * * *',
      '2026-03-28T00:00:00Z',
      ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'],
    ],
    // Autumn: 02:30 happens twice; it runs once.
    [
      'Europe/Berlin',
      '30 2 * * *',
      '2026-10-24T00:00:00Z',
      ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'],
    ],
    [
      'America/New_York',
      '30 2 * * *',
      '2026-03-07T00:00:00Z',
      ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'],
    ],
    [
      'America/New_York',
      '30 1 * * *',
      '2026-10-31T00:00:00Z',
      ['2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z'],
    ],
  ] as const;
  for (const [timezone, cron, from, expected] of cases) {
    it(`${timezone} ${cron} from ${from.slice(0, 10)}: once per local day`, () => {
      const clock = new ManualClock(Date.parse(from));
      const { db, scheduler, runs, missed } = recordingScheduler(':memory:', clock);
      scheduler.create({ name: 'z', cron, timezone, job: JOB }, { user: 'admin', address: '' });
      clock.advance(3 * 24 * 3_600_000 - 1);
      expect(fireTimes(runs)).toEqual(expected);
      expect(missed).toEqual([]);
      scheduler.stop();
      db.close();
    });
  }
});

/** A scheduler on `file` creates a nightly 22:00 Berlin schedule, then the service stops. */
function createThenStop(file: string, clock: ManualClock, input: { name: string; misfireGraceMs: number }) {
  const first = recordingScheduler(file, clock);
  const schedule = first.scheduler.create(
    { ...input, cron: '0 22 * * *', timezone: 'Europe/Berlin', job: JOB },
    { user: 'admin', address: '' },
  );
  first.scheduler.stop();
  first.db.close();
  return schedule;
}

describe('scheduler after downtime', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'regbridge-sched-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a run at most misfireGraceMs late runs once at start; a restart after it runs nothing again', () => {
    const file = join(dir, 'grace.db');
    const clock = new ManualClock(Date.parse('2026-11-27T12:00:00Z'));
    const schedule = createThenStop(file, clock, { name: 'z', misfireGraceMs: 3_600_000 });
    // Down over 22:00 Berlin (21:00 UTC); back 30 minutes later.
    clock.advanceTo(Date.parse('2026-11-27T21:30:00Z'));
    const second = recordingScheduler(file, clock);
    expect(second.runs).toEqual([
      { key: `schedule:${schedule.scheduleId}:2026-11-27T21:00:00.000Z`, scheduleId: schedule.scheduleId },
    ]);
    second.scheduler.stop();
    second.db.close();
    const third = recordingScheduler(file, clock);
    expect(third.runs).toEqual([]);
    third.scheduler.stop();
    third.db.close();
  });

  it('a run later than misfireGraceMs is recorded as missed (audit and event), not run', () => {
    const file = join(dir, 'missed.db');
    const clock = new ManualClock(Date.parse('2026-11-27T12:00:00Z'));
    const schedule = createThenStop(file, clock, { name: 'Nightly Z', misfireGraceMs: 600_000 });
    clock.advanceTo(Date.parse('2026-11-28T08:00:00Z'));
    const second = recordingScheduler(file, clock);
    expect(second.runs).toEqual([]);
    expect(second.missed).toEqual([
      {
        scheduleId: schedule.scheduleId,
        name: 'Nightly Z',
        fireAt: '2026-11-27T21:00:00.000Z',
        lateMs: 11 * 3_600_000,
      },
    ]);
    expect(second.audit.list(5)[0]).toMatchObject({
      action: 'schedule_missed',
      user: 'system',
      detail: `schedule ${schedule.scheduleId} "Nightly Z" at 2026-11-27T21:00:00.000Z: 39600 s late, more than its misfire grace`,
    });
    // The next night runs as usual.
    clock.advanceTo(Date.parse('2026-11-28T21:00:00Z'));
    expect(fireTimes(second.runs)).toEqual(['2026-11-28T21:00:00.000Z']);
    second.scheduler.stop();
    second.db.close();
  });
});
