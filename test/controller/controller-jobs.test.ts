/**
 * Job semantics of the controller service with real registers on a real store broker: rollout
 * (never more than batchSize running; sends paced by maxPerMinute, checked on a controllable
 * pacing clock), registers that come online after the job started, OFFLINE and NO_ANSWER at the
 * deadline, the abort rule and cancel (results never sent end CANCELLED; running scripts finish
 * and are recorded), with their audit entries.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { JobSummary } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { FakeDevice, startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { until } from '../support/waits.ts';

const ns = `stores/jobs${randomUUID().slice(0, 6)}`;
const REGS = ['reg1', 'reg2', 'reg3', 'reg4'];
/** Rate pacing on a clock the test moves: a minute passes without waiting one. */
const clock = new ManualClock();
let broker: RunningBroker;
const devices = new Map<string, RunningDevice>();
let service: RunningControllerService;
let token: string;

async function createJob(body: Record<string, unknown>): Promise<string> {
  const created = await api(service.app, token, 'POST', '/api/jobs', body);
  expect(created.statusCode, JSON.stringify(created.body)).toBe(201);
  return created.body.jobId as string;
}

/** Every summary the engine announced for one job, in order. */
function recordJob(jobId: () => string | undefined): JobSummary[] {
  const seen: JobSummary[] = [];
  service.engine.on('job', (job) => {
    if (job.jobId === jobId()) seen.push(job);
  });
  return seen;
}

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  for (const id of REGS) devices.set(id, await startRealDevice(broker, ns, id, { groups: ['front'] }));
  service = await startService(broker, ns, { clock });
  await until(() => service.controller.devices().filter((d) => d.online).length === REGS.length, 'online');
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await Promise.allSettled([...devices.values()].map((d) => d.stop()));
  await broker?.stop();
});

describe('rollout', () => {
  it('never more than batchSize registers run the script at once', async () => {
    let jobId: string | undefined;
    const seen = recordJob(() => jobId);
    jobId = await createJob({ script: 'SLEEP 150', target: { group: 'front' }, rollout: { batchSize: 2 } });
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.status).toBe('COMPLETED');
    expect(job.counts.finished).toBe(4);
    const running = seen.map((s) => s.counts.running);
    expect(Math.max(...running)).toBe(2);
    // The 3rd and 4th were sent only after one of the first two had ended.
    const sent = job.results.map((r) => Date.parse(r.sentAt!)).sort((a, b) => a - b);
    const ends = job.results.map((r) => Date.parse(r.endedAt!)).sort((a, b) => a - b);
    expect(sent[2]!).toBeGreaterThanOrEqual(ends[0]!);
    expect(sent[3]!).toBeGreaterThanOrEqual(ends[1]!);
  });

  it('at most maxPerMinute sends in a rolling minute: the next one waits for the window', async () => {
    const jobId = await createJob({
      script: 'PRINT paced',
      target: { devices: ['reg1', 'reg2', 'reg3'] },
      rollout: { maxPerMinute: 2 },
    });
    const firstSends = clock.now();
    const held = await waitForJob(service, token, jobId, (j) => j.counts.finished === 2, 'two sends');
    expect(held.counts).toMatchObject({ pending: 1, running: 0 });
    expect(held.results[2]).toEqual({ deviceId: 'reg3', status: 'PENDING', attempts: 0 });
    // The third send is scheduled one minute after the first two, on the pacing clock.
    expect(clock.dueTimes()).toEqual([firstSends + 60_000]);
    clock.advance(59_999);
    expect((await api(service.app, token, 'GET', `/api/jobs/${jobId}`)).body.counts.pending).toBe(1);
    clock.advance(1);
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.results.map((r) => r.status)).toEqual(['FINISHED', 'FINISHED', 'FINISHED']);
  });
});

describe('deadline and registers that come online later', () => {
  it('a listed register unknown at creation runs the script once it comes online', async () => {
    const jobId = await createJob({
      script: 'PRINT late',
      target: { devices: ['late1'], allowUnknown: true },
    });
    expect((await api(service.app, token, 'GET', `/api/jobs/${jobId}`)).body.results).toEqual([
      { deviceId: 'late1', status: 'PENDING', attempts: 0 },
    ]);
    devices.set('late1', await startRealDevice(broker, ns, 'late1'));
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.results).toEqual([
      expect.objectContaining({ deviceId: 'late1', status: 'FINISHED', report: 'late' }),
    ]);
  });

  it('an offline register of the group is targeted and runs the script when it is back', async () => {
    const late = await startRealDevice(broker, ns, 'late2', { groups: ['late'] });
    await until(() => service.controller.device('late2')?.online === true, 'late2 online');
    await late.stop();
    await until(() => service.controller.device('late2')?.online === false, 'late2 offline');
    const jobId = await createJob({ script: 'PRINT back', target: { group: 'late' } });
    devices.set('late2', await startRealDevice(broker, ns, 'late2', { groups: ['late'] }));
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.results).toEqual([
      expect.objectContaining({ deviceId: 'late2', status: 'FINISHED', report: 'back' }),
    ]);
  });

  it('at the deadline: never online is OFFLINE, sent without an end status is NO_ANSWER', async () => {
    const silent = new FakeDevice(broker, ns, 'silent1');
    await silent.start();
    try {
      await until(() => service.controller.device('silent1')?.online === true, 'silent1 online');
      const jobId = await createJob({
        script: 'PRINT never',
        target: { devices: ['silent1', 'ghost1', 'reg4'], allowUnknown: true },
        deadlineMs: 1500,
      });
      const submission = await silent.waitForScript();
      expect(submission).toMatchObject({ script: 'PRINT never', requestId: `${jobId}:silent1` });
      const job = await waitForJob(service, token, jobId, ended, 'job end');
      // notAfter of every script is the job's deadline.
      expect(submission.notAfter).toBe(Date.parse(job.deadlineAt));
      expect(job.status).toBe('COMPLETED');
      expect(job.results).toEqual([
        expect.objectContaining({
          deviceId: 'silent1',
          status: 'NO_ANSWER',
          error: expect.stringContaining('no reply'),
        }),
        expect.objectContaining({ deviceId: 'ghost1', status: 'OFFLINE' }),
        expect.objectContaining({ deviceId: 'reg4', status: 'FINISHED' }),
      ]);
      expect(job.counts).toMatchObject({ noAnswer: 1, offline: 1, finished: 1 });
    } finally {
      await silent.stop();
    }
  });
});

describe('abort and cancel', () => {
  it('abort rule: once failed/ended >= failureRatio the job is ABORTED and nothing more is sent', async () => {
    const jobId = await createJob({
      script: 'FAIL drawer jammed',
      target: { group: 'front' },
      rollout: { batchSize: 1 },
      abort: { failureRatio: 0.5 },
    });
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.status).toBe('ABORTED');
    expect(job.results.map((r) => [r.deviceId, r.status])).toEqual([
      ['reg1', 'FAILURE'],
      ['reg2', 'CANCELLED'],
      ['reg3', 'CANCELLED'],
      ['reg4', 'CANCELLED'],
    ]);
    expect(job.results[1]).toEqual({
      deviceId: 'reg2',
      status: 'CANCELLED',
      error: 'not sent: the job was aborted',
      endedAt: expect.any(String),
      attempts: 0,
    });
    for (const id of ['reg2', 'reg3', 'reg4']) {
      expect(
        devices
          .get(id)!
          .queue.list()
          .some((t) => t.requestId === `${jobId}:${id}`),
      ).toBe(false);
    }
    const audit = await api(service.app, token, 'GET', '/api/audit?limit=5');
    expect(audit.body.entries).toContainEqual(
      expect.objectContaining({
        action: 'job_aborted',
        user: 'system',
        detail: expect.stringContaining(jobId),
      }),
    );
  });

  it('abort cancels the tasks of the job still queued on registers; they end CANCELLED, never started', async () => {
    // reg1 is busy, so the job's task waits in its queue while reg2 fails at once.
    const busy = devices.get('reg1')!.queue.submit('SLEEP 1000', { source: 'rest' });
    const jobId = await createJob({
      script: 'FAIL till empty',
      target: { devices: ['reg1', 'reg2'] },
      abort: { failureRatio: 0.5 },
    });
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.status).toBe('ABORTED');
    expect(job.results[1]).toMatchObject({ deviceId: 'reg2', status: 'FAILURE', error: 'till empty' });
    expect(job.results[0]).toMatchObject({
      deviceId: 'reg1',
      status: 'CANCELLED',
      taskId: expect.any(Number),
      error: expect.stringMatching(/^CANCELLED/),
    });
    const task = devices.get('reg1')!.queue.get(job.results[0]!.taskId!)!;
    expect(task).toMatchObject({ requestId: `${jobId}:reg1`, state: 'failed' });
    expect(task.startedAt).toBeUndefined();
    expect(devices.get('reg1')!.queue.get(busy.task.id)?.state).toBe('running');
  });

  it('cancel: a queued task of the job is cancelled on the register, a running one finishes', async () => {
    devices.get('reg3')!.queue.submit('SLEEP 1000', { source: 'rest' });
    const jobId = await createJob({ script: 'SLEEP 300\nPRINT done', target: { devices: ['reg3', 'reg4'] } });
    // Both sent: reg4 runs the script, reg3 holds it queued behind its own task.
    await waitForJob(service, token, jobId, (j) => j.counts.running === 2, 'both sent');
    await until(
      () =>
        devices
          .get('reg3')!
          .queue.list()
          .some((t) => t.requestId === `${jobId}:reg3`),
      'queued on reg3',
    );
    const cancelled = await api(service.app, token, 'POST', `/api/jobs/${jobId}/cancel`);
    expect(cancelled.body.status).toBe('CANCELLED');
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.results.map((r) => [r.deviceId, r.status])).toEqual([
      ['reg3', 'CANCELLED'],
      ['reg4', 'FINISHED'],
    ]);
    expect(job.results[0]!.error).toMatch(/^CANCELLED/);
    expect(job.results[1]!.report).toBe('done');
  });

  it('minEnded holds the ratio back until enough results have ended', async () => {
    const jobId = await createJob({
      script: 'FAIL once',
      target: { devices: ['reg1', 'reg2'] },
      rollout: { batchSize: 1 },
      abort: { failureRatio: 0.5, minEnded: 2 },
    });
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.status).toBe('ABORTED');
    expect(job.results.map((r) => r.status)).toEqual(['FAILURE', 'FAILURE']);
  });

  it('cancel: the job is CANCELLED at once, the running script finishes and is recorded', async () => {
    const jobId = await createJob({
      script: 'SLEEP 400\nPRINT done',
      target: { group: 'front' },
      rollout: { batchSize: 1 },
    });
    await waitForJob(service, token, jobId, (j) => j.counts.running === 1, 'first send');
    const cancelled = await api(service.app, token, 'POST', `/api/jobs/${jobId}/cancel`);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.body.status).toBe('CANCELLED');
    expect(cancelled.body.counts).toMatchObject({ running: 1, cancelled: 3 });
    const job = await waitForJob(service, token, jobId, ended, 'job end');
    expect(job.status).toBe('CANCELLED');
    expect(job.results.map((r) => [r.deviceId, r.status])).toEqual([
      ['reg1', 'FINISHED'],
      ['reg2', 'CANCELLED'],
      ['reg3', 'CANCELLED'],
      ['reg4', 'CANCELLED'],
    ]);
    const again = await api(service.app, token, 'POST', `/api/jobs/${jobId}/cancel`);
    expect(again.statusCode).toBe(409);
    const audit = await api(service.app, token, 'GET', '/api/audit?limit=10');
    expect(audit.body.entries).toContainEqual(
      expect.objectContaining({ action: 'job_cancelled', user: 'admin', detail: `job ${jobId}` }),
    );
  });
});
