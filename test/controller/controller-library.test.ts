/**
 * The script library, validation before sending and approval (docs/controller.md, "Script
 * library", "Approval") over real HTTP against a real controller service with a real register
 * on a real store broker and a real history file: versions and archive, rendering edge cases
 * (every problem at once), jobs by scriptRef, INVALID_SCRIPT per line, --script-dialect none,
 * approval with self-approval refused, deny, the event, and a restart while waiting.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerServiceSettings, RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { ended, startService, waitForJob } from '../support/controller-service.ts';
import { readEventStream } from '../support/event-stream.ts';
import { until } from '../support/waits.ts';

const ns = `stores/lib${randomUUID().slice(0, 6)}`;
const db = join(mkdtempSync(join(tmpdir(), 'regbridge-library-')), 'history.db');
const USERS = (['viewer', 'operator', 'author', 'approver', 'admin'] as const).map((role) => ({
  name: role,
  password: `${role}-pw`,
  role,
}));
let broker: RunningBroker;
let device: RunningDevice;
let service: RunningControllerService;
const tokens: Record<string, string> = {};

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies, checked by each expectation
  body: any;
}

async function http(
  role: string,
  method: string,
  path: string,
  body?: unknown,
  on = service,
): Promise<Reply> {
  const response = await fetch(`http://127.0.0.1:${on.httpPort}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${tokens[role]}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

async function start(settings: Partial<ControllerServiceSettings> = {}): Promise<RunningControllerService> {
  const started = await startService(broker, ns, { db, settings: { users: USERS, ...settings } });
  for (const user of USERS) {
    const response = await fetch(`http://127.0.0.1:${started.httpPort}/api/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userName: user.name, password: user.password }),
    });
    tokens[user.name] = ((await response.json()) as { token: string }).token;
  }
  return started;
}

const zReport = {
  name: 'Z report',
  description: 'closes the fiscal day',
  body: 'PRINT closing {{store}} by {{clerk}}\nPRINT copies {{copies}}\nZ REPORT',
  params: [
    { name: 'store', type: 'string', pattern: '[a-z]{2}[0-9]{2}' },
    { name: 'clerk', type: 'enum', values: ['ann', 'bob'] },
    { name: 'copies', type: 'integer', default: 1 },
  ],
};

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  device = await startRealDevice(broker, ns, 'reg1', { groups: ['front'] });
  service = await start();
  await until(() => service.controller.devices().some((d) => d.online), 'the register online');
});

afterAll(async () => {
  await service?.stop();
  await device?.stop();
  await broker?.stop();
});

describe('the library', () => {
  it('authors create versions, never change them, and archive; operators may not write', async () => {
    for (const role of ['viewer', 'operator', 'approver']) {
      expect((await http(role, 'POST', '/api/scripts', zReport)).body.code, role).toBe('FORBIDDEN');
    }
    const created = await http('author', 'POST', '/api/scripts', zReport);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      version: 1,
      latestVersion: 1,
      createdBy: 'author',
      archived: false,
      requiresApproval: false,
    });
    const { scriptId } = created.body;
    const v2 = await http('admin', 'PUT', `/api/scripts/${scriptId}`, { ...zReport, body: 'X REPORT' });
    expect(v2.body).toMatchObject({ scriptId, version: 2, body: 'X REPORT', createdBy: 'admin' });
    expect((await http('viewer', 'GET', `/api/scripts/${scriptId}/versions/1`)).body.body).toBe(zReport.body);
    expect((await http('viewer', 'GET', `/api/scripts/${scriptId}`)).body.version).toBe(2);
    const versions = await http('viewer', 'GET', `/api/scripts/${scriptId}/versions`);
    expect(versions.body.scripts.map((s: { version: number }) => s.version)).toEqual([2, 1]);
    expect(
      (await http('viewer', 'GET', '/api/scripts')).body.scripts.map((s: { scriptId: string }) => s.scriptId),
    ).toContain(scriptId);
    expect((await http('viewer', 'GET', `/api/scripts/${scriptId}/versions/9`)).body.code).toBe(
      'SCRIPT_DOES_NOT_EXIST',
    );

    const archived = await http('author', 'DELETE', `/api/scripts/${scriptId}`);
    expect(archived.body.archived).toBe(true);
    const refused = await http('operator', 'POST', '/api/jobs', {
      scriptRef: { scriptId, version: 1 },
      target: { group: 'front' },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('SCRIPT_ARCHIVED');
    expect((await http('author', 'PUT', `/api/scripts/${scriptId}`, zReport)).body.code).toBe(
      'SCRIPT_ARCHIVED',
    );
    expect(
      (await http('viewer', 'GET', '/api/scripts')).body.scripts.map((s: { scriptId: string }) => s.scriptId),
    ).not.toContain(scriptId);
    expect(
      (await http('viewer', 'GET', '/api/scripts?archived=true')).body.scripts.map(
        (s: { scriptId: string }) => s.scriptId,
      ),
    ).toContain(scriptId);
  });

  it('a placeholder that is not declared is refused at save', async () => {
    const refused = await http('author', 'POST', '/api/scripts', {
      name: 'x',
      body: 'PRINT {{nope}}',
      params: [],
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 'INVALID_PARAMS',
      problems: [{ line: 1, message: 'placeholder {{nope}} is not a declared parameter' }],
    });
  });

  it('rendering reports every problem at once: missing, mistyped, pattern, enum, CR/LF, unknown', async () => {
    const { body: script } = await http('author', 'POST', '/api/scripts', zReport);
    const ref = (params: Record<string, unknown>) => ({
      scriptRef: { scriptId: script.scriptId, params },
      target: { group: 'front' },
    });
    const all = await http('operator', 'POST', '/api/jobs', ref({ store: 'XX', copies: 'two', extra: 'x' }));
    expect(all.status).toBe(400);
    expect(all.body.code).toBe('INVALID_PARAMS');
    expect(all.body.problems).toEqual([
      { message: 'parameter extra is not declared by the script' },
      { message: 'parameter store does not match the pattern [a-z]{2}[0-9]{2}' },
      { message: 'parameter clerk is required' },
      { message: 'parameter copies must be an integer, got "two"' },
    ]);
    const lines = await http(
      'operator',
      'POST',
      '/api/jobs',
      ref({ store: 'ab12\nZ REPORT', clerk: 'carl\r' }),
    );
    expect(lines.body.problems).toEqual([
      { message: 'parameter store must not contain a line break (CR or LF)' },
      { message: 'parameter clerk must not contain a line break (CR or LF)' },
    ]);
    const enumValue = await http('operator', 'POST', '/api/jobs', ref({ store: 'ab12', clerk: 'carl' }));
    expect(enumValue.body.problems).toEqual([
      { message: 'parameter clerk must be one of ann, bob, got "carl"' },
    ]);
  });

  it('a job by scriptRef records the script, version, params and the rendered text, and runs it', async () => {
    const { body: script } = await http('author', 'POST', '/api/scripts', zReport);
    const created = await http('operator', 'POST', '/api/jobs', {
      scriptRef: { scriptId: script.scriptId, params: { store: 'ab12', clerk: 'ann' } },
      target: { group: 'front' },
    });
    expect(created.status).toBe(201);
    expect(created.body.script).toBe('PRINT closing ab12 by ann\nPRINT copies 1\nZ REPORT');
    expect(created.body.scriptRef).toEqual({
      scriptId: script.scriptId,
      version: 1,
      params: { store: 'ab12', clerk: 'ann' },
    });
    const done = await waitForJob(service, tokens.admin!, created.body.jobId, ended, 'the library job');
    expect(done.status).toBe('COMPLETED');
    expect(done.results[0]!.report?.split('\n').slice(0, 2)).toEqual(['closing ab12 by ann', 'copies 1']);
  });
});

describe('validation before sending', () => {
  it('INVALID_SCRIPT with every bad line; nothing is created', async () => {
    const before = (await http('viewer', 'GET', '/api/jobs')).body.jobs.length;
    const refused = await http('operator', 'POST', '/api/jobs', {
      script: 'PRINT ok\nPRNT typo\n# fine\nSLEEP forever\nRECEIPT',
      target: { group: 'front' },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'INVALID_SCRIPT',
      message: 'line 2: unknown command "PRNT" (and 2 more)',
      problems: [
        { line: 2, message: 'unknown command "PRNT"' },
        { line: 4, message: 'SLEEP needs a whole number of milliseconds from 0 to 60000, got "forever"' },
        { line: 5, message: 'usage: RECEIPT OPEN [SALE|REFUND], RECEIPT CLOSE or RECEIPT CANCEL' },
      ],
    });
    expect((await http('viewer', 'GET', '/api/jobs')).body.jobs.length).toBe(before);
  });

  it('POST /api/scripts/validate checks a script or a rendered scriptRef', async () => {
    expect(
      (await http('viewer', 'POST', '/api/scripts/validate', { script: 'X REPORT\nBOGUS' })).body,
    ).toEqual({
      valid: false,
      script: 'X REPORT\nBOGUS',
      problems: [{ line: 2, message: 'unknown command "BOGUS"' }],
    });
    const { body: script } = await http('author', 'POST', '/api/scripts', zReport);
    const ok = await http('viewer', 'POST', '/api/scripts/validate', {
      scriptRef: { scriptId: script.scriptId, params: { store: 'cd34', clerk: 'bob', copies: 2 } },
    });
    expect(ok.body).toEqual({
      valid: true,
      script: 'PRINT closing cd34 by bob\nPRINT copies 2\nZ REPORT',
      problems: [],
    });
    const missing = await http('viewer', 'POST', '/api/scripts/validate', {
      scriptRef: { scriptId: script.scriptId },
    });
    expect(missing.body).toEqual({
      valid: false,
      problems: [{ message: 'parameter store is required' }, { message: 'parameter clerk is required' }],
    });
  });

  it('--script-dialect none sends what the simulator would refuse', async () => {
    const other = await startService(broker, ns, { settings: { users: USERS, scriptDialect: 'none' } });
    try {
      const response = await fetch(`http://127.0.0.1:${other.httpPort}/api/authenticate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userName: 'operator', password: 'operator-pw' }),
      });
      const { token } = (await response.json()) as { token: string };
      const created = await fetch(`http://127.0.0.1:${other.httpPort}/api/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ script: 'VENDOR-CMD 1', target: { devices: ['reg1'] } }),
      });
      expect(created.status).toBe(201);
    } finally {
      await other.stop();
    }
  });
});

describe('approval', () => {
  let scriptId: string;

  beforeAll(async () => {
    const { body } = await http('author', 'POST', '/api/scripts', {
      name: 'close day',
      body: 'Z REPORT',
      requiresApproval: true,
    });
    scriptId = body.scriptId;
  });

  const waitingJob = async (): Promise<Reply> =>
    http('operator', 'POST', '/api/jobs', { scriptRef: { scriptId }, target: { group: 'front' } });

  it('waits, refuses self-approval and non-approvers, starts once approved, with an event', async () => {
    const ticket = await http('approver', 'POST', '/api/events/ticket');
    expect(ticket.status).toBe(200);
    const response = await fetch(
      `http://127.0.0.1:${service.httpPort}/api/events?ticket=${ticket.body.ticket}`,
    );
    const stream = readEventStream(response);
    const created = await waitingJob();
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('WAITING_FOR_APPROVAL');
    const { jobId } = created.body;
    await stream.readUntil(new RegExp(`event: job.waiting_for_approval\\ndata: \\{"jobId":"${jobId}"`));
    await stream.cancel();
    expect(device.queue.list().some((task) => task.requestId?.startsWith(jobId))).toBe(false);

    const self = await http('operator', 'POST', `/api/jobs/${jobId}/approve`, {});
    expect(self.body.code).toBe('FORBIDDEN');
    for (const role of ['viewer', 'author']) {
      expect((await http(role, 'POST', `/api/jobs/${jobId}/approve`, {})).body.code, role).toBe('FORBIDDEN');
    }
    const approved = await http('approver', 'POST', `/api/jobs/${jobId}/approve`, {
      comment: 'ok for tonight',
    });
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe('IN_PROGRESS');
    expect(approved.body.approval).toMatchObject({
      decision: 'approved',
      by: 'approver',
      comment: 'ok for tonight',
    });
    const done = await waitForJob(service, tokens.admin!, jobId, ended, 'the approved job');
    expect(done.results[0]!.status).toBe('FINISHED');
    expect((await http('admin', 'POST', `/api/jobs/${jobId}/deny`, {})).body.code).toBe('JOB_NOT_WAITING');
  });

  it('an approver or admin who created the job may not approve it: 403 SELF_APPROVAL, audited', async () => {
    const created = await http('admin', 'POST', '/api/jobs', {
      scriptRef: { scriptId },
      target: { group: 'front' },
    });
    const self = await http('admin', 'POST', `/api/jobs/${created.body.jobId}/approve`, {});
    expect(self.status).toBe(403);
    expect(self.body).toMatchObject({ code: 'SELF_APPROVAL', jobId: created.body.jobId });
    const { body } = await http('admin', 'GET', '/api/audit?limit=1');
    expect(body.entries[0]).toMatchObject({
      user: 'admin',
      action: 'forbidden',
      detail: `approve of job ${created.body.jobId}: SELF_APPROVAL`,
    });
    expect((await http('approver', 'POST', `/api/jobs/${created.body.jobId}/deny`)).body.status).toBe(
      'DENIED',
    );
  });

  it('deny ends it DENIED, nothing sent', async () => {
    const { body: job } = await waitingJob();
    const denied = await http('approver', 'POST', `/api/jobs/${job.jobId}/deny`, { comment: 'not today' });
    expect(denied.body).toMatchObject({
      status: 'DENIED',
      approval: { decision: 'denied', by: 'approver', comment: 'not today' },
    });
    expect(denied.body.endedAt).toBeDefined();
    expect(denied.body.results).toEqual([
      expect.objectContaining({
        deviceId: 'reg1',
        status: 'CANCELLED',
        error: 'not sent: the job was denied',
      }),
    ]);
  });

  it('a restart while waiting keeps it waiting; approved after, it runs', async () => {
    const { body: job } = await waitingJob();
    await service.stop();
    service = await start();
    expect((await http('viewer', 'GET', `/api/jobs/${job.jobId}`)).body.status).toBe('WAITING_FOR_APPROVAL');
    expect(device.queue.list().some((task) => task.requestId?.startsWith(job.jobId))).toBe(false);
    const approved = await http('admin', 'POST', `/api/jobs/${job.jobId}/approve`);
    expect(approved.body.approval).toMatchObject({ decision: 'approved', by: 'admin' });
    const done = await waitForJob(service, tokens.admin!, job.jobId, ended, 'approved after restart');
    expect(done.status).toBe('COMPLETED');
  });

  it('--approval all: every job waits', async () => {
    await service.stop();
    service = await start({ approval: 'all' });
    const created = await http('operator', 'POST', '/api/jobs', {
      script: 'PRINT hi',
      target: { group: 'front' },
    });
    expect(created.body.status).toBe('WAITING_FOR_APPROVAL');
  });
});
