/**
 * The controller service's HTTP API with real registers (startDevice) on a real store broker:
 * login and its audit, devices, a job to a group and to a list, the job list and its pages,
 * Idempotency-Key, 404/409 codes, validation, health, metrics, OpenAPI, the dashboard, and the
 * event stream over real HTTP.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job, JobSummary } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { api, ended, login, startService, waitForJob } from '../support/controller-service.ts';
import { readEventStream } from '../support/event-stream.ts';
import { until } from '../support/waits.ts';

const ns = `stores/api${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
const devices: RunningDevice[] = [];
let service: RunningControllerService;
let token: string;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  devices.push(
    ...(await Promise.all([
      startRealDevice(broker, ns, 'reg1', { groups: ['front'] }),
      startRealDevice(broker, ns, 'reg2', { groups: ['front'] }),
      startRealDevice(broker, ns, 'reg3', { groups: ['back'] }),
    ])),
  );
  service = await startService(broker, ns);
  await until(() => service.controller.devices().filter((d) => d.online).length === 3, 'registers online');
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await Promise.allSettled(devices.map((d) => d.stop()));
  await broker?.stop();
});

describe('login and the audit trail', () => {
  it('a wrong password is 401 INVALID_CREDENTIALS; both attempts are audited with user and address', async () => {
    const refused = await api(service.app, undefined, 'POST', '/api/authenticate', {
      userName: 'admin',
      password: 'nope',
    });
    expect(refused.statusCode).toBe(401);
    expect(refused.body).toEqual({
      statusCode: 401,
      error: 'Unauthorized',
      code: 'INVALID_CREDENTIALS',
      message: 'Wrong user name or password',
    });
    const viaGet = await service.app.inject({
      method: 'GET',
      url: '/api/authenticate',
      payload: { userName: 'admin', password: 'admin-pw' },
    });
    expect(viaGet.statusCode).toBe(200);
    expect(viaGet.json()).toMatchObject({ tokenType: 'Bearer', expiresIn: 3600 });
    const audit = await api(service.app, token, 'GET', '/api/audit?limit=2');
    expect(audit.statusCode).toBe(200);
    expect(audit.body.entries.map((e: { action: string }) => e.action)).toEqual(['login', 'login_failed']);
    // The name tried is audited as a digest: it may be a password typed into the wrong field.
    expect(audit.body.entries[1]).toMatchObject({
      user: expect.stringMatching(/^digest:[0-9a-f]{16}$/),
      address: '127.0.0.1',
      detail: 'INVALID_CREDENTIALS (a configured user)',
    });
    expect(JSON.stringify(audit.body)).not.toContain('nope');
  });

  it('every /api route but authenticate needs a token: 401 UNAUTHORIZED with WWW-Authenticate', async () => {
    for (const [method, url] of [
      ['GET', '/api/devices'],
      ['GET', '/api/jobs'],
      ['POST', '/api/jobs'],
      ['GET', '/api/jobs/x'],
      ['POST', '/api/jobs/x/cancel'],
      ['GET', '/api/audit'],
      ['GET', '/api/events'],
      ['POST', '/api/events/ticket'],
      ['POST', '/api/logout'],
    ] as const) {
      const answer = await api(service.app, undefined, method, url, method === 'POST' ? {} : undefined);
      expect(answer.statusCode, `${method} ${url}`).toBe(401);
      expect(answer.body.code).toBe('UNAUTHORIZED');
      expect(answer.headers['www-authenticate']).toBe('Bearer');
    }
  });
});

describe('devices', () => {
  it('lists every register by deviceId with its groups, boot and last task', async () => {
    const answer = await api(service.app, token, 'GET', '/api/devices');
    expect(answer.statusCode).toBe(200);
    expect(answer.body.devices.map((d: { deviceId: string }) => d.deviceId)).toEqual([
      'reg1',
      'reg2',
      'reg3',
    ]);
    expect(answer.body.devices[0]).toMatchObject({
      deviceId: 'reg1',
      online: true,
      groups: ['all', 'front'],
      installation: 'cash-register',
      bootId: expect.any(String),
      lastSeenAt: expect.stringMatching(/Z$/),
      queue: { queued: 0, running: 0 },
    });
  });
});

describe('jobs', () => {
  let groupJob: Job;

  it('a job to a group runs on the group registers known then and COMPLETES with their reports', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT hello',
      target: { group: 'front' },
      name: 'greeting',
    });
    expect(created.statusCode).toBe(201);
    expect(created.headers.location).toBe(`/api/jobs/${created.body.jobId}`);
    expect(created.body).toMatchObject({
      name: 'greeting',
      createdBy: 'admin',
      status: 'IN_PROGRESS',
      script: 'PRINT hello',
      target: { group: 'front' },
      counts: { total: 2 },
    });
    expect(Date.parse(created.body.deadlineAt) - Date.parse(created.body.createdAt)).toBe(600_000);
    groupJob = await waitForJob(service, token, created.body.jobId, ended, 'job end');
    expect(groupJob.status).toBe('COMPLETED');
    expect(groupJob.counts).toEqual({
      total: 2,
      pending: 0,
      running: 0,
      finished: 2,
      failed: 0,
      offline: 0,
      noAnswer: 0,
      cancelled: 0,
    });
    expect(groupJob.results.map((r) => [r.deviceId, r.status, r.report])).toEqual([
      ['reg1', 'FINISHED', 'hello'],
      ['reg2', 'FINISHED', 'hello'],
    ]);
    for (const result of groupJob.results) {
      expect(result.taskId).toEqual(expect.any(Number));
      expect(Date.parse(result.endedAt!)).toBeGreaterThanOrEqual(Date.parse(result.sentAt!));
    }
    // The register ran it with the job's requestId (unique to job and register).
    const task = devices[0]!.queue.get(groupJob.results[0]!.taskId!);
    expect(task).toMatchObject({ state: 'finished', requestId: `${groupJob.jobId}:reg1` });
  });

  it('a job to a list: a failing script is FAILURE with its error; an unknown id stays pending', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'FAIL paper out',
      target: { devices: ['reg3', 'nosuch'], allowUnknown: true },
      deadlineMs: 1500,
    });
    expect(created.statusCode).toBe(201);
    const job = await waitForJob(service, token, created.body.jobId, ended, 'job end');
    expect(job.status).toBe('COMPLETED');
    expect(job.results).toEqual([
      expect.objectContaining({ deviceId: 'reg3', status: 'FAILURE', error: 'paper out' }),
      expect.objectContaining({ deviceId: 'nosuch', status: 'OFFLINE' }),
    ]);
    expect(job.results[1]!.sentAt).toBeUndefined();
  });

  it('lists jobs newest first without results; ?limit and ?before page through them', async () => {
    const all = await api(service.app, token, 'GET', '/api/jobs');
    expect(all.statusCode).toBe(200);
    const jobs = all.body.jobs as JobSummary[];
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    expect(jobs.some((j) => 'results' in j)).toBe(false);
    const first = await api(service.app, token, 'GET', '/api/jobs?limit=1');
    expect(first.body.jobs.map((j: JobSummary) => j.jobId)).toEqual([jobs[0]!.jobId]);
    const next = await api(service.app, token, 'GET', `/api/jobs?limit=1&before=${jobs[0]!.jobId}`);
    expect(next.body.jobs.map((j: JobSummary) => j.jobId)).toEqual([jobs[1]!.jobId]);
    const summary = jobs.find((j) => j.jobId === groupJob.jobId)!;
    expect(summary.counts.finished).toBe(2);
    const bad = await api(service.app, token, 'GET', '/api/jobs?limit=0');
    expect(bad.statusCode).toBe(400);
    const unknown = await api(service.app, token, 'GET', '/api/jobs?before=nosuch');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body.code).toBe('JOB_DOES_NOT_EXIST');
  });

  it('unknown job: 404 JOB_DOES_NOT_EXIST; cancelling an ended job: 409 JOB_ENDED', async () => {
    const missing = await api(service.app, token, 'GET', '/api/jobs/nosuch');
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'JOB_DOES_NOT_EXIST',
      message: 'Job nosuch does not exist',
      jobId: 'nosuch',
    });
    const cancelMissing = await api(service.app, token, 'POST', '/api/jobs/nosuch/cancel');
    expect(cancelMissing.statusCode).toBe(404);
    const late = await api(service.app, token, 'POST', `/api/jobs/${groupJob.jobId}/cancel`);
    expect(late.statusCode).toBe(409);
    expect(late.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'JOB_ENDED',
      message: `Job ${groupJob.jobId} has already ended (COMPLETED)`,
      jobId: groupJob.jobId,
      status: 'COMPLETED',
    });
  });

  it('Idempotency-Key: the same request again is 200 with the first job; another request is 409', async () => {
    const key = `key-${randomUUID()}`;
    const body = { script: 'PRINT once', target: { devices: ['reg1'] } };
    const first = await api(service.app, token, 'POST', '/api/jobs', body, { 'idempotency-key': key });
    expect(first.statusCode).toBe(201);
    const again = await api(service.app, token, 'POST', '/api/jobs', body, { 'idempotency-key': key });
    expect(again.statusCode).toBe(200);
    expect(again.body.jobId).toBe(first.body.jobId);
    expect(again.headers.location).toBe(`/api/jobs/${first.body.jobId}`);
    const other = await api(
      service.app,
      token,
      'POST',
      '/api/jobs',
      { ...body, script: 'PRINT twice' },
      {
        'idempotency-key': key,
      },
    );
    expect(other.statusCode).toBe(409);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', jobId: first.body.jobId });
    const job = await waitForJob(service, token, first.body.jobId, ended, 'job end');
    expect(job.results).toEqual([
      expect.objectContaining({ deviceId: 'reg1', status: 'FINISHED', report: 'once' }),
    ]);
    const tasks = devices[0]!.queue.list().filter((t) => t.report === 'once');
    expect(tasks).toHaveLength(1);
  });

  it('bad requests are 400 INVALID_REQUEST naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ target: { group: 'front' } }, "body field 'script' is required"],
      [{ script: '  ', target: { group: 'front' } }, "body field 'script' must not be empty"],
      [{ script: 'X REPORT', target: { group: 'bad/group' } }, "'target"],
      [{ script: 'X REPORT', target: { devices: [] } }, "'target"],
      [{ script: 'X REPORT', target: { group: 'front' }, rollout: { batchSize: 0 } }, "'rollout.batchSize'"],
      [
        { script: 'X REPORT', target: { group: 'front' }, abort: { failureRatio: 2 } },
        "'abort.failureRatio'",
      ],
      [{ script: 'X REPORT', target: { group: 'front' }, extra: 1 }, 'extra'],
      [{ script: 'X REPORT', target: { group: 'nobody' } }, 'no register is known in group nobody'],
    ];
    for (const [payload, message] of cases) {
      const answer = await api(service.app, token, 'POST', '/api/jobs', payload);
      expect(answer.statusCode, JSON.stringify(payload)).toBe(400);
      expect(answer.body.code).toBe('INVALID_REQUEST');
      expect(answer.body.message).toContain(message);
    }
  });
});

describe('service routes', () => {
  it('health, metrics, OpenAPI, docs and the dashboard answer without a token', async () => {
    const health = await api(service.app, undefined, 'GET', '/health');
    expect(health.statusCode).toBe(200);
    expect(health.body).toMatchObject({
      status: 'ok',
      mqtt: { state: 'connected' },
      devices: { known: 3, online: 3 },
      jobs: { inProgress: expect.any(Number), total: expect.any(Number) },
    });
    const metrics = await api(service.app, undefined, 'GET', '/metrics');
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('regbridge_controller_results_total{status="FINISHED"}');
    expect(metrics.body).toContain('regbridge_controller_devices{online="true"} 3');
    const openapi = await api(service.app, undefined, 'GET', '/openapi.json');
    expect(openapi.statusCode).toBe(200);
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining([
        '/api/authenticate',
        '/api/devices',
        '/api/jobs',
        '/api/jobs/{jobId}',
        '/api/jobs/{jobId}/cancel',
        '/api/audit',
        '/api/events',
        '/api/events/ticket',
        '/api/logout',
        '/health',
        '/metrics',
      ]),
    );
    expect(openapi.body.paths['/api/jobs'].post.responses['201'].headers.Location).toBeDefined();
    expect(openapi.body.components.schemas.Job).toBeDefined();
    const docs = await service.app.inject({ method: 'GET', url: '/docs' });
    expect(docs.statusCode).toBeLessThan(400);
    const dashboard = await service.app.inject({ method: 'GET', url: '/' });
    expect(dashboard.statusCode).toBe(200);
    expect(dashboard.headers['content-type']).toContain('text/html');
  });

  it("a dashboard page's address (a shared link, a reload) answers the dashboard; others stay 404", async () => {
    const index = (await service.app.inject({ method: 'GET', url: '/' })).body;
    for (const url of [
      '/registers',
      '/registers/north/reg7',
      '/stores',
      '/stores/north',
      '/jobs?status=COMPLETED',
      '/jobs/new',
      '/audit',
    ]) {
      const page = await service.app.inject({ method: 'GET', url });
      expect([url, page.statusCode, page.headers['content-type']]).toEqual([
        url,
        200,
        'text/html; charset=utf-8',
      ]);
      expect(page.body).toBe(index);
    }
    // Not a page: the API's own 404 with its code, and unknown paths as before.
    const api404 = await service.app.inject({ method: 'GET', url: '/api/registers' });
    expect(api404.statusCode).toBe(404);
    expect(api404.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
    expect((await service.app.inject({ method: 'GET', url: '/no-such-page' })).statusCode).toBe(404);
    const icon = await service.app.inject({ method: 'GET', url: '/favicon.svg' });
    expect([icon.statusCode, icon.headers['content-type']]).toEqual([200, 'image/svg+xml']);
    // The pages are the dashboard's, not the API's: the OpenAPI document does not list them.
    const openapi = (await service.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const pages = ['/registers', '/jobs', '/audit'];
    expect(Object.keys(openapi.paths).filter((path) => pages.some((p) => path.startsWith(p)))).toEqual([]);
  });
});

describe('events', () => {
  it('streams job changes and device changes over real HTTP, opened with a single-use ticket', async () => {
    const controller = new AbortController();
    const { ticket } = (await api(service.app, token, 'POST', '/api/events/ticket')).body;
    const response = await fetch(`http://127.0.0.1:${service.httpPort}/api/events?ticket=${ticket}`, {
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const stream = readEventStream(response);
    await stream.readUntil(/: connected/);
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT live',
      target: { devices: ['reg2'] },
    });
    await stream.readUntil(/"status":"COMPLETED"/);
    const jobEvents = stream.text
      .split('\n\n')
      .filter((block) => block.startsWith('event: job\n'))
      .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6)));
    expect(jobEvents.every((e) => e.jobId === created.body.jobId && !('results' in e))).toBe(true);
    // Nor the script, which may be 1 MiB: about 1,000 events per job to 500 registers.
    expect(jobEvents.every((e) => !('script' in e) && e.createdBy === 'admin')).toBe(true);
    expect(jobEvents.map((e) => e.result?.status).filter(Boolean)).toEqual(['RUNNING', 'FINISHED']);
    expect(jobEvents.at(-1)).toMatchObject({ status: 'COMPLETED', counts: { finished: 1 } });
    // The register's task changes are device events too (last task and queue), coalesced.
    const taskId = (await api(service.app, token, 'GET', `/api/jobs/${created.body.jobId}`)).body.results[0]
      .taskId;
    await stream.readUntil(
      new RegExp(
        `event: device\ndata: \\{"deviceId":"reg2".*"lastTask":\\{"id":${taskId},"status":"FINISHED"\\},"queue":\\{"queued":0,"running":0\\}`,
      ),
    );
    // A register going away is a device event.
    const reg3 = devices[2]!;
    await reg3.stop();
    await stream.readUntil(/event: device\ndata: \{"deviceId":"reg3","online":false/);
    controller.abort();
  });
});
