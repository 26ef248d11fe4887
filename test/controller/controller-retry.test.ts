/**
 * Fiscal-safe retry of the controller service's jobs, with real registers and registers played
 * by the test on a real store broker, on a clock the test moves: an attempt is tried again only
 * while it provably has not run (never sent, refused without a task, no answer with no task
 * known), every attempt uses the job's one requestId for the register, and results count
 * their attempts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { FakeDevice, startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { until } from '../support/waits.ts';

const ns = `stores/retry${randomUUID().slice(0, 6)}`;
const clock = new ManualClock();
let broker: RunningBroker;
let service: RunningControllerService;
let token: string;
const devices: RunningDevice[] = [];
const fakes: FakeDevice[] = [];

async function createJob(body: Record<string, unknown>): Promise<Job> {
  const created = await api(service.app, token, 'POST', '/api/jobs', body);
  expect(created.statusCode, JSON.stringify(created.body)).toBe(201);
  return created.body as Job;
}

const read = async (jobId: string): Promise<Job> =>
  (await api(service.app, token, 'GET', `/api/jobs/${jobId}`)).body as Job;

async function fake(id: string): Promise<FakeDevice> {
  const device = new FakeDevice(broker, ns, id);
  await device.start();
  fakes.push(device);
  await until(() => service.controller.device(id)?.online === true, `${id} online`);
  return device;
}

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { clock });
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  for (const device of fakes) await device.stop();
  for (const device of devices) await device.stop();
  await broker?.stop();
});

describe('retry', () => {
  it('a register offline at its turn that comes back within the retry budget runs the script once', async () => {
    const job = await createJob({
      script: 'PRINT night',
      target: { devices: ['sleepy'], allowUnknown: true },
      retry: { maxAttempts: 3, backoffMs: 60_000, on: ['OFFLINE'] },
    });
    expect(job.results).toEqual([
      {
        deviceId: 'sleepy',
        status: 'PENDING',
        attempts: 1,
        error: 'attempt 1: not online; tried again',
        nextAttemptAt: new Date(clock.now() + 60_000).toISOString(),
      },
    ]);
    devices.push(await startRealDevice(broker, ns, 'sleepy'));
    await until(() => service.controller.device('sleepy')?.online === true, 'sleepy online');
    // Back online, but the next attempt is due only after the backoff.
    expect((await read(job.jobId)).results[0]).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(service.controller.tasks('sleepy')).toEqual([]);
    clock.advance(60_000);
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.status).toBe('COMPLETED');
    expect(done.results[0]).toMatchObject({ status: 'FINISHED', attempts: 2, report: 'night' });
    const requestId = `${job.jobId}:sleepy`;
    expect(service.controller.tasks('sleepy').filter((t) => t.requestId === requestId)).toHaveLength(1);
  });

  it('a register never back within maxAttempts ends OFFLINE after its last attempt', async () => {
    const job = await createJob({
      script: 'PRINT never',
      target: { devices: ['gone'], allowUnknown: true },
      retry: { maxAttempts: 2, backoffMs: 5000 },
    });
    clock.advance(5000);
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.results).toEqual([
      {
        deviceId: 'gone',
        status: 'OFFLINE',
        attempts: 2,
        error: 'not online when its turn came (attempt 2)',
        endedAt: expect.any(String),
      },
    ]);
  });

  it('a register that received the first attempt but answered late runs it once', async () => {
    const slow = await fake('slow');
    const job = await createJob({
      script: 'PRINT z',
      target: { devices: ['slow'], allowUnknown: true },
      retry: { maxAttempts: 3, backoffMs: 60_000, attemptTimeoutMs: 30_000 },
    });
    const first = await slow.waitForScript();
    expect(first.requestId).toBe(`${job.jobId}:slow`);
    // No reply and no status within the attempt time-out: no task is known, so it may be retried.
    clock.advance(30_000);
    await until(async () => (await read(job.jobId)).results[0]?.status === 'PENDING', 'attempt 1 ended');
    expect((await read(job.jobId)).results[0]).toMatchObject({ attempts: 1, status: 'PENDING' });
    // The register answers late: it had the task all along.
    await slow.status({ id: 7, status: 'FINISHED', requestId: first.requestId!, report: 'Z 1' });
    await until(() => service.controller.tasks('slow').length === 1, 'late status seen');
    clock.advance(60_000);
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.results[0]).toMatchObject({ status: 'FINISHED', taskId: 7, report: 'Z 1', attempts: 1 });
    expect(slow.scripts).toHaveLength(1);
  });

  it('a second attempt carries the same requestId, so a register that had the first runs it once', async () => {
    const deaf = await fake('deaf');
    const job = await createJob({
      script: 'PRINT again',
      target: { devices: ['deaf'], allowUnknown: true },
      retry: { maxAttempts: 2, backoffMs: 10_000, attemptTimeoutMs: 10_000 },
    });
    const first = await deaf.waitForScript(1);
    clock.advance(10_000);
    await until(async () => (await read(job.jobId)).results[0]?.status === 'PENDING', 'attempt 1 ended');
    clock.advance(10_000);
    const second = await deaf.waitForScript(2);
    expect(second.requestId).toBe(first.requestId);
    await deaf.reply(second, { id: 3, status: 'RUNNING' });
    await deaf.status({ id: 3, status: 'FINISHED', requestId: second.requestId!, report: 'once' });
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.results[0]).toMatchObject({ status: 'FINISHED', taskId: 3, attempts: 2 });
  });

  it('a script the register accepted is never sent again, even without an end status', async () => {
    const mute = await fake('mute');
    const job = await createJob({
      script: 'PRINT once',
      target: { devices: ['mute'], allowUnknown: true },
      retry: { maxAttempts: 5, backoffMs: 1000, attemptTimeoutMs: 5000 },
    });
    const script = await mute.waitForScript();
    await mute.reply(script, { id: 9, status: 'RUNNING' });
    await mute.status({
      id: 9,
      status: 'RUNNING',
      requestId: script.requestId!,
      startedAt: new Date().toISOString(),
    });
    await until(() => service.controller.tasks('mute').length === 1, 'task seen');
    clock.advance(5000);
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.results[0]).toMatchObject({ status: 'NO_ANSWER', taskId: 9, attempts: 1 });
    clock.advance(10_000);
    expect(mute.scripts).toHaveLength(1);
  });

  it('a refusal without a task (REFUSED) is tried again after the backoff', async () => {
    const full = await fake('full');
    const job = await createJob({
      script: 'PRINT later',
      target: { devices: ['full'], allowUnknown: true },
      retry: { maxAttempts: 2, backoffMs: 2000, on: ['REFUSED'] },
    });
    await full.reply(await full.waitForScript(1), { error: 'QUEUE_FULL: too many queued tasks' });
    await until(async () => (await read(job.jobId)).results[0]?.status === 'PENDING', 'refusal seen');
    expect((await read(job.jobId)).results[0]?.error).toBe(
      'attempt 1: QUEUE_FULL: too many queued tasks; tried again',
    );
    clock.advance(2000);
    const second = await full.waitForScript(2);
    await full.status({ id: 1, status: 'FINISHED', requestId: second.requestId!, report: 'ok' });
    const done = await waitForJob(service, token, job.jobId, ended, 'job end');
    expect(done.results[0]).toMatchObject({ status: 'FINISHED', attempts: 2 });
  });

  it('refuses a retry outside its limits', async () => {
    const answer = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { devices: ['a'], allowUnknown: true },
      retry: { maxAttempts: 11, on: ['FAILURE'] },
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
    expect(answer.body.message).toContain('maxAttempts');
  });
});
