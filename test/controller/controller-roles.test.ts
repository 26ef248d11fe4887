/**
 * Users and roles of the controller service (docs/controller.md, "Users and roles") over real
 * HTTP against a real controller service with real registers on a real store broker: every row
 * of the role table, scopes, `GET /api/me`, hashes from `regbridge hash-password` as passwords,
 * every refusal audited, and a reload of the users file ending the tokens of changed users.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { may } from '../../controller/permissions.ts';
import { actionOf } from '../../controller/service/access.ts';
import { parseControllerUser } from '../../controller/users.ts';
import { hashPassword } from '../../src/auth/password-hash.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { ended, startService, waitForJob } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

const ns = `stores/roles${randomUUID().slice(0, 6)}`;
const dir = mkdtempSync(join(tmpdir(), 'regbridge-roles-'));
const usersFile = join(dir, 'users');
let broker: RunningBroker;
const devices: RunningDevice[] = [];
let service: RunningControllerService;
let base: string;
let hash: string;

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies, checked by each expectation
  body: any;
}

async function http(token: string | undefined, method: string, path: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

async function loginAs(userName: string, password = `${userName}-pw`): Promise<string> {
  const reply = await http(undefined, 'POST', '/api/authenticate', { userName, password });
  if (reply.status !== 200) throw new Error(`login ${userName}: ${JSON.stringify(reply.body)}`);
  return reply.body.token;
}

const tokens: Record<string, string> = {};
const ROLE_USERS = ['viewer', 'operator', 'author', 'approver', 'admin'] as const;
const job = { script: 'PRINT hello', target: { group: 'front' } };

beforeAll(async () => {
  hash = await hashPassword('hashed-pw');
  writeFileSync(
    usersFile,
    [
      '# role table users',
      'viewer:viewer-pw:viewer',
      'operator:operator-pw:operator',
      'author:author-pw:author',
      'approver:approver-pw:approver',
      'front-op:front-op-pw:operator:group=front',
      'store-op:store-op-pw:operator:store=s1',
      `hashed:${hash}:viewer`,
    ].join('\n'),
  );
  broker = await brokersByName.embedded.start(ns);
  devices.push(
    ...(await Promise.all([
      startRealDevice(broker, ns, 'reg1', { groups: ['front'] }),
      startRealDevice(broker, ns, 'reg2', { groups: ['back'] }),
    ])),
  );
  service = await startService(broker, ns, {
    settings: { users: [{ name: 'admin', password: 'admin-pw' }], usersFile },
  });
  base = `http://127.0.0.1:${service.httpPort}`;
  await until(() => service.controller.devices().filter((d) => d.online).length === 2, 'registers online');
  for (const name of [...ROLE_USERS, 'front-op', 'store-op']) tokens[name] = await loginAs(name);
});

afterAll(async () => {
  await service?.stop();
  await Promise.allSettled(devices.map((d) => d.stop()));
  await broker?.stop();
});

describe('the role table', () => {
  it('read devices, jobs, results, audit: every role', async () => {
    const { body: created } = await http(tokens.admin, 'POST', '/api/jobs', job);
    for (const role of ROLE_USERS) {
      for (const path of ['/api/devices', '/api/jobs', `/api/jobs/${created.jobId}`, '/api/audit']) {
        expect((await http(tokens[role], 'GET', path)).status, `${role} GET ${path}`).toBe(200);
      }
    }
  });

  it('the event stream: every role', async () => {
    for (const role of ROLE_USERS) {
      const ticket = await http(tokens[role], 'POST', '/api/events/ticket');
      expect(ticket.status, role).toBe(200);
      const response = await fetch(`${base}/api/events?ticket=${ticket.body.ticket}`);
      expect(response.status, role).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      await response.body?.cancel();
    }
  });

  it('create and cancel jobs: operator and admin; viewer, author, approver get 403 FORBIDDEN', async () => {
    for (const role of ['viewer', 'author', 'approver'] as const) {
      const refused = await http(tokens[role], 'POST', '/api/jobs', job);
      expect(refused).toEqual({
        status: 403,
        body: {
          statusCode: 403,
          error: 'Forbidden',
          code: 'FORBIDDEN',
          message: `Role ${role} may not POST /api/jobs`,
          role,
        },
      });
    }
    for (const role of ['operator', 'admin'] as const) {
      const created = await http(tokens[role], 'POST', '/api/jobs', { ...job, script: 'SLEEP 3000' });
      expect(created.status, role).toBe(201);
      expect(created.body.createdBy).toBe(role);
      for (const other of ['viewer', 'author', 'approver'] as const) {
        const cancel = await http(tokens[other], 'POST', `/api/jobs/${created.body.jobId}/cancel`);
        expect(cancel.status, other).toBe(403);
        expect(cancel.body.code).toBe('FORBIDDEN');
      }
      const cancelled = await http(tokens[role], 'POST', `/api/jobs/${created.body.jobId}/cancel`);
      expect(cancelled.status, role).toBe(200);
      expect(cancelled.body.status).toBe('CANCELLED');
    }
  });

  it('schedules, webhooks and any unlisted change: admin only; unlisted reads: every role', () => {
    for (const [method, url] of [
      ['POST', '/api/schedules'],
      ['PUT', '/api/webhooks/:webhookId'],
      ['DELETE', '/api/anything-new'],
    ] as const) {
      expect(actionOf(method, url)).toBe('administer');
      for (const role of ['viewer', 'operator', 'author', 'approver'] as const)
        expect(may(role, 'administer')).toBe(false);
      expect(may('admin', 'administer')).toBe(true);
    }
    expect(actionOf('POST', '/api/schedules/:scheduleId/run')).toBe('operate');
    expect(actionOf('POST', '/api/jobs/:jobId/pause')).toBe('operate');
    expect(actionOf('GET', '/api/schedules')).toBe('read');
  });

  it('webhooks, reads too: admin only (403 FORBIDDEN for every other role)', async () => {
    const created = await http(tokens.admin, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      events: ['job.completed'],
    });
    expect(created.status).toBe(201);
    const deliveries = `/api/webhooks/${created.body.webhookId}/deliveries`;
    for (const path of ['/api/webhooks', deliveries]) {
      for (const role of ['viewer', 'operator', 'author', 'approver'] as const) {
        expect(await http(tokens[role], 'GET', path), `${role} GET ${path}`).toEqual({
          status: 403,
          body: {
            statusCode: 403,
            error: 'Forbidden',
            code: 'FORBIDDEN',
            message: `Role ${role} may not GET ${path === deliveries ? '/api/webhooks/:webhookId/deliveries' : path}`,
            role,
          },
        });
      }
      expect((await http(tokens.admin, 'GET', path)).status, `admin GET ${path}`).toBe(200);
    }
    expect(actionOf('GET', '/api/webhooks')).toBe('administer');
    expect(actionOf('GET', '/api/webhooks/:webhookId/deliveries')).toBe('administer');
    expect((await http(tokens.admin, 'DELETE', `/api/webhooks/${created.body.webhookId}`)).status).toBe(200);
  });

  it('a refused body is not looked at: 403 before 400', async () => {
    const refused = await http(tokens.viewer, 'POST', '/api/jobs', { nonsense: true });
    expect(refused.status).toBe(403);
  });

  it('every refusal is audited with user, address, route and role', async () => {
    await http(tokens.approver, 'POST', '/api/jobs', job);
    const { body } = await http(tokens.admin, 'GET', '/api/audit?limit=1');
    expect(body.entries[0]).toMatchObject({
      user: 'approver',
      address: '127.0.0.1',
      action: 'forbidden',
      detail: 'POST /api/jobs (role approver)',
    });
  });
});

describe('scopes', () => {
  it('an operator with group=front may target group front and its registers, nothing else', async () => {
    const inside = await http(tokens['front-op'], 'POST', '/api/jobs', job);
    expect(inside.status).toBe(201);
    await waitForJob(service, tokens.admin!, inside.body.jobId, ended, 'the scoped job ends');
    expect(
      (await http(tokens['front-op'], 'POST', '/api/jobs', { ...job, target: { devices: ['reg1'] } })).status,
    ).toBe(201);
    for (const target of [
      { group: 'back' },
      { group: 'all' },
      { devices: ['reg1', 'reg2'] },
      { devices: ['ghost'], allowUnknown: true },
    ]) {
      const refused = await http(tokens['front-op'], 'POST', '/api/jobs', { ...job, target });
      expect(refused.status, JSON.stringify(target)).toBe(403);
      expect(refused.body.code).toBe('OUT_OF_SCOPE');
    }
    const outside = await http(tokens['front-op'], 'POST', '/api/jobs', { ...job, target: { group: 'all' } });
    expect(outside.body).toEqual({
      statusCode: 403,
      error: 'Forbidden',
      code: 'OUT_OF_SCOPE',
      message: 'the job reaches registers outside your scope group=front',
      deviceIds: ['reg2'],
    });
    const { body } = await http(tokens.admin, 'GET', '/api/audit?limit=1');
    expect(body.entries[0]).toMatchObject({ user: 'front-op', action: 'out_of_scope' });
  });

  it("a group=front operator's continuous job must target group front: later registers stay inside", async () => {
    const endAt = new Date(Date.now() + 60_000).toISOString();
    for (const target of [
      { attributes: { region: 'north' }, continuous: true },
      { group: 'not-yet-seen', continuous: true },
      { devices: ['reg1'], attributes: { region: 'north' }, continuous: true },
    ]) {
      const refused = await http(tokens['front-op'], 'POST', '/api/jobs', { ...job, target, endAt });
      expect(refused.status, JSON.stringify(target)).toBe(403);
      expect(refused.body.code).toBe('OUT_OF_SCOPE');
    }
    const inside = await http(tokens['front-op'], 'POST', '/api/jobs', {
      ...job,
      target: { group: 'front', continuous: true },
      endAt,
    });
    expect(inside.status, JSON.stringify(inside.body)).toBe(201);
    expect((await http(tokens['front-op'], 'POST', `/api/jobs/${inside.body.jobId}/cancel`)).status).toBe(
      200,
    );
  });

  it('a scoped operator may not cancel a job reaching registers outside its scope', async () => {
    const wide = await http(tokens.admin, 'POST', '/api/jobs', {
      ...job,
      target: { group: 'all' },
      script: 'SLEEP 3000',
    });
    const refused = await http(tokens['front-op'], 'POST', `/api/jobs/${wide.body.jobId}/cancel`);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('OUT_OF_SCOPE');
    expect((await http(tokens.admin, 'POST', `/api/jobs/${wide.body.jobId}/cancel`)).status).toBe(200);
  });

  it('a store scope fails closed while registers carry no store', async () => {
    const refused = await http(tokens['store-op'], 'POST', '/api/jobs', job);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('OUT_OF_SCOPE');
  });
});

describe('OpenAPI', () => {
  it('documents /api/me, the library, approval and the 403 of every role-checked route', async () => {
    const { body } = await http(undefined, 'GET', '/openapi.json');
    for (const path of ['/api/me', '/api/scripts', '/api/scripts/validate', '/api/jobs/{jobId}/approve']) {
      expect(Object.keys(body.paths), path).toContain(path);
    }
    expect(Object.keys(body.paths['/api/jobs'].post.responses)).toContain('403');
    expect(Object.keys(body.paths['/api/authenticate'].post.responses)).not.toContain('403');
  });
});

describe('GET /api/me and passwords', () => {
  it('answers user, role and scope', async () => {
    expect((await http(tokens.viewer, 'GET', '/api/me')).body).toEqual({ user: 'viewer', role: 'viewer' });
    expect((await http(tokens.admin, 'GET', '/api/me')).body).toEqual({ user: 'admin', role: 'admin' });
    expect((await http(tokens['front-op'], 'GET', '/api/me')).body).toEqual({
      user: 'front-op',
      role: 'operator',
      scope: 'group=front',
    });
    expect((await http(undefined, 'GET', '/api/me')).status).toBe(401);
  });

  it('a hash from hash-password is a hash: the password logs in, the hash text does not', async () => {
    const token = await loginAs('hashed', 'hashed-pw');
    expect((await http(token, 'GET', '/api/me')).body).toEqual({ user: 'hashed', role: 'viewer' });
    const refused = await http(undefined, 'POST', '/api/authenticate', {
      userName: 'hashed',
      password: hash,
    });
    expect(refused.status).toBe(401);
  });

  it('--user parses ROLE and SCOPE from the right; a password may hold colons', () => {
    expect(parseControllerUser('ann:pa:ss')).toEqual({ name: 'ann', password: 'pa:ss', role: 'admin' });
    expect(parseControllerUser('ann:pa:ss:viewer')).toEqual({
      name: 'ann',
      password: 'pa:ss',
      role: 'viewer',
    });
    expect(parseControllerUser('ann:pw:operator:group=a,b')).toEqual({
      name: 'ann',
      password: 'pw',
      role: 'operator',
      scope: { kind: 'group', values: ['a', 'b'] },
    });
    expect(() => parseControllerUser('ann:pw:boss:group=a')).toThrow('role "boss" is not one of');
    expect(() => parseControllerUser('ann:pw:viewer:group=a')).toThrow(
      'a scope applies to the operator role only',
    );
    expect(() => parseControllerUser('ann:$scrypt$ln=14,r=8,p=1$bad$bad')).toThrow('hash is malformed');
    expect(() => parseControllerUser('ann:pw:operator:group=a b')).toThrow('is not a valid id');
  });
});

describe('reloading the users file', () => {
  it('ends the tokens of removed and changed users only, and takes new ones', async () => {
    const before = { ...tokens };
    writeFileSync(
      usersFile,
      [
        'viewer:viewer-pw:viewer',
        'operator:operator-pw:viewer', // role changed
        'author:new-pw:author', // password changed
        'approver:approver-pw:approver',
        'newcomer:newcomer-pw:operator',
      ].join('\n'),
    );
    expect(service.reloadUsers().sort()).toEqual(['author', 'front-op', 'hashed', 'operator', 'store-op']);
    for (const kept of ['viewer', 'approver', 'admin']) {
      expect((await http(before[kept], 'GET', '/api/me')).status, kept).toBe(200);
    }
    for (const gone of ['operator', 'author', 'front-op']) {
      expect((await http(before[gone], 'GET', '/api/me')).status, gone).toBe(401);
    }
    const demoted = await loginAs('operator');
    expect((await http(demoted, 'POST', '/api/jobs', job)).body.code).toBe('FORBIDDEN');
    expect(
      (await http(undefined, 'POST', '/api/authenticate', { userName: 'author', password: 'author-pw' }))
        .status,
    ).toBe(401);
    await loginAs('author', 'new-pw');
    await loginAs('newcomer');
    const { body } = await http(tokens.admin, 'GET', '/api/audit?limit=10');
    expect(body.entries).toContainEqual(
      expect.objectContaining({
        user: 'system',
        action: 'users_reloaded',
        detail: '6 users; tokens ended for operator, author, front-op, store-op, hashed',
      }),
    );
  });

  it('a malformed file changes nothing', async () => {
    writeFileSync(usersFile, 'viewer:viewer-pw:emperor\n');
    expect(() => service.reloadUsers()).toThrow(`${usersFile}:1: user viewer: role "emperor" is not one of`);
    await loginAs('newcomer');
  });
});
