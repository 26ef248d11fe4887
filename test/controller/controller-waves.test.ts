/**
 * Rollout control of the controller service's jobs with real registers on a real store broker:
 * waves taken in target order (a failed pilot stops them, pauseAfter waits for a person),
 * pause and resume by a person, and rerun over the registers whose results had chosen statuses.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { FakeDevice, startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

const ns = `stores/waves${randomUUID().slice(0, 6)}`;
const REGS = ['w1', 'w2', 'w3', 'w4'];
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;
let pilot: FakeDevice;
const devices: RunningDevice[] = [];

async function createJob(body: Record<string, unknown>): Promise<Job> {
  const created = await api(service.app, token, 'POST', '/api/jobs', body);
  expect(created.statusCode, JSON.stringify(created.body)).toBe(201);
  return created.body as Job;
}

const tasksOf = (jobId: string, deviceId: string) =>
  service.controller.tasks(deviceId).filter((t) => t.requestId === `${jobId}:${deviceId}`);

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  for (const id of REGS) devices.push(await startRealDevice(broker, ns, id, { groups: ['shop'] }));
  service = await startService(broker, ns);
  pilot = new FakeDevice(broker, ns, 'pilot');
  await pilot.start(['shop']);
  await until(() => service.controller.devices().filter((d) => d.online).length === 5, 'all online');
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await pilot?.stop();
  for (const device of devices) await device.stop();
  await broker?.stop();
});

describe('waves', () => {
  it('stop on a failed pilot: the job is PAUSED with a reason, the next waves get nothing', async () => {
    const job = await createJob({
      script: 'PRINT price update',
      target: { devices: ['pilot', ...REGS] },
      rollout: { waves: [{ size: 1, successRatio: 1 }, { size: '50%' }] },
    });
    expect(job.wave).toEqual({ current: 1, count: 3 });
    expect(job.results.map((r) => r.status)).toEqual(['RUNNING', 'PENDING', 'PENDING', 'PENDING', 'PENDING']);
    const script = await pilot.waitForScript(1);
    await pilot.reply(script, { id: 1, status: 'RUNNING' });
    await pilot.status({
      id: 1,
      status: 'FAILURE',
      requestId: script.requestId!,
      error: 'price table locked',
    });
    const paused = await waitForJob(service, token, job.jobId, (j) => j.status === 'PAUSED', 'paused');
    expect(paused.pausedReason).toBe(
      'wave 1 of 3 ended: 0 of 1 registers finished (0%), below the success ratio of 100%; resume to send the next wave anyway',
    );
    expect(paused.results.slice(1).map((r) => [r.status, r.attempts])).toEqual(
      REGS.map(() => ['PENDING', 0]),
    );
    for (const id of REGS) expect(tasksOf(job.jobId, id)).toEqual([]);
    const audit = await api(service.app, token, 'GET', '/api/audit?limit=5');
    expect(audit.body.entries.map((e: { action: string }) => e.action)).toContain('job_paused');
    const cancelled = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/cancel`);
    expect(cancelled.body.status).toBe('CANCELLED');
    expect(cancelled.body.pausedReason).toBeUndefined();

    // Rerun: a new job over the registers never sent the script, with new requestIds.
    const rerun = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/rerun`, {
      statuses: ['CANCELLED'],
    });
    expect(rerun.statusCode).toBe(201);
    expect(rerun.headers.location).toBe(`/api/jobs/${rerun.body.jobId}`);
    expect(rerun.body).toMatchObject({
      rerunOf: job.jobId,
      target: { devices: REGS },
      script: 'PRINT price update',
    });
    const done = await waitForJob(service, token, rerun.body.jobId, ended, 'rerun end');
    expect(done.results.map((r) => r.status)).toEqual(REGS.map(() => 'FINISHED'));
    for (const id of REGS) expect(tasksOf(rerun.body.jobId, id)).toHaveLength(1);
  });

  it('pauseAfter waits for a person; resume sends the next wave', async () => {
    const job = await createJob({
      script: 'PRINT wave',
      target: { group: 'shop' },
      rollout: { waves: [{ size: 2, pauseAfter: true }, { size: 2 }] },
    });
    // Target order of a group: as the directory lists it; the pilot fails nothing here.
    const firstTwo = job.results.slice(0, 2).map((r) => r.deviceId);
    const fakeFirst = firstTwo.includes('pilot');
    if (fakeFirst) {
      const script = await pilot.waitForScript(2);
      await pilot.status({ id: 2, status: 'FINISHED', requestId: script.requestId!, report: 'wave' });
    }
    const paused = await waitForJob(service, token, job.jobId, (j) => j.status === 'PAUSED', 'paused');
    expect(paused.pausedReason).toBe('wave 1 of 3 done, paused after it as asked; resume to send wave 2');
    expect(paused.wave).toEqual({ current: 1, count: 3 });
    expect(paused.counts).toMatchObject({ finished: 2, pending: 3 });
    const resumed = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/resume`);
    expect(resumed.statusCode).toBe(200);
    expect(resumed.body.wave).toEqual({ current: 2, count: 3 });
    expect(resumed.body.status).toBe('IN_PROGRESS');
    await until(async () => {
      const now = (await api(service.app, token, 'GET', `/api/jobs/${job.jobId}`)).body as Job;
      const script = pilot.scripts.find((s) => s.requestId === `${job.jobId}:pilot`);
      if (script && !fakeFirst && now.results.find((r) => r.deviceId === 'pilot')?.status === 'RUNNING') {
        await pilot.status({ id: 3, status: 'FINISHED', requestId: script.requestId!, report: 'wave' });
      }
      return now.endedAt !== undefined;
    }, 'job end');
    const done = (await api(service.app, token, 'GET', `/api/jobs/${job.jobId}`)).body as Job;
    expect(done.status).toBe('COMPLETED');
    expect(done.counts.finished).toBe(5);
  });
});

describe('pause and resume', () => {
  it('a paused job sends nothing more; running scripts finish; resume goes on', async () => {
    const job = await createJob({
      script: 'SLEEP 200\nPRINT slow',
      target: { devices: ['w1', 'w2'] },
      rollout: { batchSize: 1 },
    });
    const paused = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/pause`);
    expect(paused.statusCode).toBe(200);
    expect(paused.body).toMatchObject({ status: 'PAUSED', pausedReason: 'paused by admin' });
    await waitForJob(service, token, job.jobId, (j) => j.results[0]?.status === 'FINISHED', 'w1 finished');
    const held = (await api(service.app, token, 'GET', `/api/jobs/${job.jobId}`)).body as Job;
    expect(held.status).toBe('PAUSED');
    expect(held.results[1]).toMatchObject({ status: 'PENDING', attempts: 0 });
    const resumed = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/resume`);
    expect(resumed.body.status).toBe('IN_PROGRESS');
    expect(resumed.body.pausedReason).toBeUndefined();
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.status).toBe('COMPLETED');
    const again = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/pause`);
    expect(again.statusCode).toBe(409);
    expect(again.body).toMatchObject({ code: 'JOB_ENDED', jobId: job.jobId, status: 'COMPLETED' });
    const unknown = await api(service.app, token, 'POST', '/api/jobs/nope/resume');
    expect(unknown.statusCode).toBe(404);
    const open = await createJob({ script: 'SLEEP 300', target: { devices: ['w3'] } });
    const early = await api(service.app, token, 'POST', `/api/jobs/${open.jobId}/rerun`, {
      statuses: ['FAILURE'],
    });
    expect(early.statusCode).toBe(409);
    expect(early.body.code).toBe('JOB_NOT_ENDED');
    await waitForJob(service, token, open.jobId, ended, 'open job end');
  });
});

describe('continuous jobs', () => {
  it('a register that joins the group while the job runs gets the script, until cancel', async () => {
    const endAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT welcome',
      target: { group: 'newcomers', continuous: true },
      endAt,
    });
    expect(created.statusCode, JSON.stringify(created.body)).toBe(201);
    const job = created.body as Job;
    expect(job).toMatchObject({ status: 'IN_PROGRESS', endAt, deadlineAt: endAt, results: [] });
    const late = await startRealDevice(broker, ns, 'newbie', { groups: ['newcomers'] });
    devices.push(late);
    const reached = await waitForJob(
      service,
      token,
      job.jobId,
      (j) => j.counts.finished === 1,
      'newbie finished',
    );
    expect(reached.status).toBe('IN_PROGRESS');
    expect(reached.results).toEqual([
      expect.objectContaining({ deviceId: 'newbie', status: 'FINISHED', report: 'welcome', attempts: 1 }),
    ]);
    const cancelled = await api(service.app, token, 'POST', `/api/jobs/${job.jobId}/cancel`);
    expect(cancelled.body).toMatchObject({ status: 'CANCELLED', endedAt: expect.any(String) });
  });

  it('needs an endAt', async () => {
    const answer = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { group: 'newcomers', continuous: true },
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.body.message).toContain('endAt');
  });
});
