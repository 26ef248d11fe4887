/**
 * Time in the controller service's jobs, on a clock the test moves (never slept), with real
 * registers on a real store broker: startAt keeps a job SCHEDULED until then; a window sends only
 * while one is open, WAITING_FOR_WINDOW between them.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { until } from '../support/waits.ts';

const ns = `stores/time${randomUUID().slice(0, 6)}`;
const clock = new ManualClock();
const HOUR = 3_600_000;
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;
const devices: RunningDevice[] = [];

async function createJob(body: Record<string, unknown>): Promise<Job> {
  const created = await api(service.app, token, 'POST', '/api/jobs', body);
  expect(created.statusCode, JSON.stringify(created.body)).toBe(201);
  return created.body as Job;
}

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  devices.push(await startRealDevice(broker, ns, 't1'));
  service = await startService(broker, ns, { clock });
  await until(() => service.controller.device('t1')?.online === true, 't1 online');
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  for (const device of devices) await device.stop();
  await broker?.stop();
});

describe('startAt', () => {
  it('a job is SCHEDULED until its startAt, then sent; its deadline counts from then', async () => {
    const startAt = new Date(clock.now() + HOUR).toISOString();
    const job = await createJob({
      script: 'PRINT later',
      target: { devices: ['t1'], allowUnknown: true },
      startAt,
    });
    expect(job).toMatchObject({ status: 'SCHEDULED', startAt });
    expect(job.deadlineAt).toBe(new Date(Date.parse(startAt) + 10 * 60_000).toISOString());
    expect(job.results).toEqual([{ deviceId: 't1', status: 'PENDING', attempts: 0 }]);
    clock.advance(HOUR - 1);
    expect(((await api(service.app, token, 'GET', `/api/jobs/${job.jobId}`)).body as Job).status).toBe(
      'SCHEDULED',
    );
    expect(service.controller.tasks('t1').filter((t) => t.requestId === `${job.jobId}:t1`)).toEqual([]);
    clock.advance(1);
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done).toMatchObject({
      status: 'COMPLETED',
      results: [{ status: 'FINISHED', report: 'later', attempts: 1 }],
    });
  });

  it('a startAt already past starts the job at once', async () => {
    const startAt = new Date(clock.now() - 1000).toISOString();
    const job = await createJob({
      script: 'PRINT now',
      target: { devices: ['t1'], allowUnknown: true },
      startAt,
    });
    expect(job.status).toBe('IN_PROGRESS');
    await waitForJob(service, token, job.jobId, ended, 'job end');
  });
});

describe('windows', () => {
  it('sends only while a window is open; WAITING_FOR_WINDOW between windows', async () => {
    // A window that opened this minute (UTC) and lasts an hour; the next opens a day later.
    const opened = new Date(Math.floor(clock.now() / 60_000) * 60_000);
    const window = {
      cron: `${opened.getUTCMinutes()} ${opened.getUTCHours()} * * *`,
      durationMs: HOUR,
      timezone: 'UTC',
    };
    const job = await createJob({
      script: 'PRINT window',
      target: { devices: ['t1', 't2'], allowUnknown: true },
      window,
      deadlineMs: 3 * 24 * HOUR,
    });
    expect(job.status).toBe('IN_PROGRESS');
    await waitForJob(service, token, job.jobId, (j) => j.results[0]?.status === 'FINISHED', 't1 finished');
    clock.advanceTo(opened.getTime() + HOUR);
    const waiting = await waitForJob(
      service,
      token,
      job.jobId,
      (j) => j.status === 'WAITING_FOR_WINDOW',
      'closed',
    );
    expect(waiting.results[1]).toMatchObject({ deviceId: 't2', status: 'PENDING' });
    // t2 comes online between windows: nothing is sent until the next one opens.
    devices.push(await startRealDevice(broker, ns, 't2'));
    await until(() => service.controller.device('t2')?.online === true, 't2 online');
    expect(service.controller.tasks('t2')).toEqual([]);
    clock.advanceTo(opened.getTime() + 24 * HOUR);
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.status).toBe('COMPLETED');
    expect(done.results[1]).toMatchObject({ status: 'FINISHED', report: 'window', attempts: 1 });
  });

  it('a job created between windows waits for the next; its deadline counts from its opening', async () => {
    const next = new Date(clock.now() + 2 * HOUR);
    const window = {
      cron: `${next.getUTCMinutes()} ${next.getUTCHours()} * * *`,
      durationMs: HOUR,
      timezone: 'UTC',
    };
    const job = await createJob({
      script: 'PRINT z',
      target: { devices: ['t1'], allowUnknown: true },
      window,
    });
    expect(job.status).toBe('WAITING_FOR_WINDOW');
    const opening = Math.floor(next.getTime() / 60_000) * 60_000;
    expect(job.deadlineAt).toBe(new Date(opening + 10 * 60_000).toISOString());
    clock.advanceTo(opening);
    await waitForJob(service, token, job.jobId, ended, 'job end');
  });

  it('refuses an unknown time zone and a cron that is not five fields', async () => {
    const zone = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { devices: ['t1'], allowUnknown: true },
      window: { cron: '0 22 * * *', durationMs: HOUR, timezone: 'Europe/Atlantis' },
    });
    expect(zone.statusCode).toBe(400);
    expect(zone.body.message).toContain("unknown time zone 'Europe/Atlantis'");
    const cron = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { devices: ['t1'], allowUnknown: true },
      window: { cron: '0 0 22 * * *', durationMs: HOUR, timezone: 'UTC' },
    });
    expect(cron.statusCode).toBe(400);
    expect(cron.body.message).toContain('5-part');
  });
});
