/**
 * `outcome` of an ended job (SUCCEEDED, PARTIAL, FAILED: every result FINISHED, some, none), over
 * the HTTP API with real registers on a real broker, as GET /api/jobs/{id} and the list show it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { emptyCounts, type Job, type JobSummary, jobOutcome } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

const ns = `stores/out${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
const devices: RunningDevice[] = [];
let service: RunningControllerService;
let token: string;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  devices.push(...(await Promise.all(['reg1', 'reg2', 'gone'].map((id) => startRealDevice(broker, ns, id)))));
  service = await startService(broker, ns);
  await until(() => service.controller.devices().filter((d) => d.online).length === 3, 'registers online');
  // `gone` is known to the controller but offline: its result ends OFFLINE at the deadline.
  await devices.pop()!.stop();
  await until(() => service.controller.device('gone')?.online === false, 'gone offline');
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await Promise.allSettled(devices.map((d) => d.stop()));
  await broker?.stop();
});

async function runJob(script: string, ids: string[]): Promise<Job> {
  const created = await api(service.app, token, 'POST', '/api/jobs', {
    script,
    target: { devices: ids },
    deadlineMs: 1500,
  });
  expect(created.statusCode).toBe(201);
  expect(created.body.outcome).toBeUndefined();
  return waitForJob(service, token, created.body.jobId, ended, 'job end');
}

describe('outcome of an ended job', () => {
  it('SUCCEEDED, PARTIAL and FAILED over the API, in the job and in the list', async () => {
    const all = await runJob('PRINT ok', ['reg1', 'reg2']);
    expect([all.status, all.outcome]).toEqual(['COMPLETED', 'SUCCEEDED']);
    const some = await runJob('PRINT ok', ['reg1', 'gone']);
    expect([some.status, some.outcome]).toEqual(['COMPLETED', 'PARTIAL']);
    const none = await runJob('FAIL paper out', ['reg1', 'reg2']);
    // COMPLETED, like full success: the outcome is what tells them apart.
    expect([none.status, none.outcome]).toEqual(['COMPLETED', 'FAILED']);
    const listed = (await api(service.app, token, 'GET', '/api/jobs?limit=3')).body.jobs as JobSummary[];
    expect(listed.map((j) => j.outcome)).toEqual(['FAILED', 'PARTIAL', 'SUCCEEDED']);
  });

  it('none while in progress; a cancelled job whose running register finished is PARTIAL', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'SLEEP 300\nPRINT late',
      target: { devices: ['reg1', 'reg2'] },
      rollout: { batchSize: 1 },
    });
    const running = await waitForJob(
      service,
      token,
      created.body.jobId,
      (j) => j.results.some((r) => r.status === 'RUNNING'),
      'a register running',
    );
    expect(running.status).toBe('IN_PROGRESS');
    expect('outcome' in running).toBe(false);
    const cancelled = await api(service.app, token, 'POST', `/api/jobs/${created.body.jobId}/cancel`);
    expect(cancelled.body.status).toBe('CANCELLED');
    // Not ended while its running script may still finish: no outcome yet, so it never flips.
    expect('outcome' in cancelled.body).toBe(false);
    const job = await waitForJob(service, token, created.body.jobId, ended, 'job end');
    expect(job.counts).toMatchObject({ total: 2, finished: 1, cancelled: 1 });
    expect(job.outcome).toBe('PARTIAL');
  });

  it('derives it from endedAt and the counts only', () => {
    const counts = { ...emptyCounts(), total: 3, finished: 3 };
    const at = '2026-11-27T00:00:00.000Z';
    expect(jobOutcome({ counts })).toBeUndefined();
    expect(jobOutcome({ endedAt: at, counts })).toBe('SUCCEEDED');
    expect(jobOutcome({ endedAt: at, counts: { ...counts, finished: 1, failed: 2 } })).toBe('PARTIAL');
    expect(jobOutcome({ endedAt: at, counts: { ...counts, finished: 0, cancelled: 3 } })).toBe('FAILED');
    expect(jobOutcome({ endedAt: at, counts: emptyCounts() })).toBe('FAILED');
  });
});
