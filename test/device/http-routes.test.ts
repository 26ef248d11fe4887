/**
 * Routes 1–8 of docs/api.md through app.inject(), with whole-body assertions.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { bearer, login, startTestApp, type TestApp, USER } from '../support/http.ts';
import { until } from '../support/waits.ts';

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

let t: TestApp;
let auth: Record<string, string>;

beforeEach(async () => {
  t = await startTestApp();
  auth = bearer(await login(t.app));
});

afterEach(async () => {
  await t.close();
});

/** Resolves once the next queue.waitForEnd() call has registered, so a release cannot race it. */
function nextWaitRegistered(): Promise<void> {
  const original = t.queue.waitForEnd.bind(t.queue);
  return new Promise((resolve) => {
    vi.spyOn(t.queue, 'waitForEnd').mockImplementationOnce((id, ms, signal) => {
      const result = original(id, ms, signal);
      resolve();
      return result;
    });
  });
}

async function submit(script: string, headers: Record<string, string> = {}) {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/vendor-script',
    headers: { ...auth, ...headers },
    payload: { vendorScript: script },
  });
  return response;
}

async function waitEnded(id: number) {
  const response = await t.app.inject({ url: `/api/tasks/${id}?waitMs=30000`, headers: auth });
  return response.json() as { status: string };
}

describe('1. /api/authenticate', () => {
  for (const method of ['GET', 'POST'] as const) {
    it(`${method} with a JSON body answers a bearer token`, async () => {
      const response = await t.app.inject({ method, url: '/api/authenticate', payload: USER });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        tokenType: 'Bearer',
        expiresIn: 3600,
      });
      const token = (response.json() as { token: string }).token;
      const tasks = await t.app.inject({ url: '/api/tasks', headers: bearer(token) });
      expect(tasks.statusCode).toBe(200);
    });
  }

  it('expiresIn follows --token-ttl', async () => {
    const other = await startTestApp({ tokenTtl: 120 });
    try {
      const response = await other.app.inject({ method: 'POST', url: '/api/authenticate', payload: USER });
      expect(response.json()).toMatchObject({ expiresIn: 120 });
    } finally {
      await other.close();
    }
  });

  it('issues a different token at every call', async () => {
    expect(await login(t.app)).not.toBe(await login(t.app));
  });
});

describe('2. POST /api/vendor-script', () => {
  it('answers 202 {id, status: RUNNING} with Location, then the task finishes', async () => {
    const response = await submit('PRINT hello\nPRINT world');
    expect(response.statusCode).toBe(202);
    const body = response.json() as { id: number };
    expect(body).toEqual({ id: expect.any(Number), status: 'RUNNING' });
    expect(Number.isSafeInteger(body.id) && body.id > 0).toBe(true);
    expect(response.headers.location).toBe(`/api/tasks/${body.id}`);
    expect(await waitEnded(body.id)).toEqual({
      id: body.id,
      status: 'FINISHED',
      report: 'hello\nworld',
      queuedAt: ISO,
      startedAt: ISO,
      finishedAt: ISO,
    });
  });

  it('ids strictly increase', async () => {
    const first = (await submit('PRINT 1')).json() as { id: number };
    const second = (await submit('PRINT 2')).json() as { id: number };
    expect(second.id).toBeGreaterThan(first.id);
  });

  it('Idempotency-Key: the same script answers 200 with the first task and runs nothing again', async () => {
    const first = await submit('PRINT once', { 'idempotency-key': 'order-42' });
    expect(first.statusCode).toBe(202);
    const { id } = first.json() as { id: number };
    await waitEnded(id);
    const again = await submit('PRINT once', { 'idempotency-key': 'order-42' });
    expect(again.statusCode).toBe(200);
    expect(again.headers.location).toBe(`/api/tasks/${id}`);
    expect(again.json()).toEqual({
      id,
      status: 'FINISHED',
      report: 'once',
      queuedAt: ISO,
      startedAt: ISO,
      finishedAt: ISO,
    });
    expect(t.queue.list()).toHaveLength(1);
  });

  it('Idempotency-Key replay while the first task still runs answers its current state', async () => {
    const first = (await submit('HOLD', { 'idempotency-key': 'k1' })).json() as { id: number };
    await until(() => t.executor.held === 1);
    const again = await submit('HOLD', { 'idempotency-key': 'k1' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ id: first.id, status: 'RUNNING', queuedAt: ISO, startedAt: ISO });
  });
});

describe('3. GET /api/tasks/{id}', () => {
  it('answers the task at once without waitMs', async () => {
    const { id } = (await submit('HOLD')).json() as { id: number };
    await until(() => t.executor.held === 1);
    const response = await t.app.inject({ url: `/api/tasks/${id}`, headers: auth });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ id, status: 'RUNNING', queuedAt: ISO, startedAt: ISO });
  });

  it('a FAILURE task carries error and no report', async () => {
    const { id } = (await submit('PRINT partial\nFAIL paper out')).json() as { id: number };
    expect(await waitEnded(id)).toEqual({
      id,
      status: 'FAILURE',
      error: 'paper out',
      queuedAt: ISO,
      startedAt: ISO,
      finishedAt: ISO,
    });
  });

  it("writes a task's keys in the order docs/api.md shows them", async () => {
    const finished = (await submit('PRINT done')).json() as { id: number };
    const failed = (await submit('FAIL paper out')).json() as { id: number };
    await waitEnded(finished.id);
    await waitEnded(failed.id);
    const keys = async (id: number) =>
      Object.keys(JSON.parse((await t.app.inject({ url: `/api/tasks/${id}`, headers: auth })).body));
    expect(await keys(finished.id)).toEqual([
      'id',
      'status',
      'report',
      'queuedAt',
      'startedAt',
      'finishedAt',
    ]);
    expect(await keys(failed.id)).toEqual(['id', 'status', 'error', 'queuedAt', 'startedAt', 'finishedAt']);
  });

  it('long poll: answers as soon as the task ends', async () => {
    const { id } = (await submit('HOLD\nPRINT done')).json() as { id: number };
    await until(() => t.executor.held === 1);
    const registered = nextWaitRegistered();
    const poll = t.app.inject({ url: `/api/tasks/${id}?waitMs=30000`, headers: auth });
    await registered;
    t.executor.release();
    const response = await poll;
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      id,
      status: 'FINISHED',
      report: 'done',
      queuedAt: ISO,
      startedAt: ISO,
      finishedAt: ISO,
    });
  });

  it('long poll: answers the current state when waitMs passes first', async () => {
    const { id } = (await submit('HOLD')).json() as { id: number };
    await until(() => t.executor.held === 1);
    const response = await t.app.inject({ url: `/api/tasks/${id}?waitMs=20`, headers: auth });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ id, status: 'RUNNING', queuedAt: ISO, startedAt: ISO });
  });

  it('waitMs=0 and waitMs=30000 are accepted', async () => {
    const { id } = (await submit('PRINT x')).json() as { id: number };
    await waitEnded(id);
    for (const waitMs of [0, 30000]) {
      const response = await t.app.inject({ url: `/api/tasks/${id}?waitMs=${waitMs}`, headers: auth });
      expect(response.statusCode).toBe(200);
    }
  });
});

describe('4. POST /api/fm-script', () => {
  it('answers 200 with the ended task', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/fm-script',
      headers: auth,
      payload: { fmScript: 'PRINT a\r\nPRINT b' },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json() as { id: number };
    expect(body).toEqual({
      id: expect.any(Number),
      status: 'FINISHED',
      report: 'a\nb',
      queuedAt: ISO,
      startedAt: ISO,
      finishedAt: ISO,
    });
    expect(response.headers.location).toBe(`/api/tasks/${body.id}`);
  });

  it('answers 200 with a FAILURE task too', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/fm-script',
      headers: auth,
      payload: { fmScript: 'FAIL jam' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      id: expect.any(Number),
      status: 'FAILURE',
      error: 'jam',
      queuedAt: ISO,
      startedAt: ISO,
      finishedAt: ISO,
    });
  });

  it('answers 202 {id, RUNNING} + Location when the task has not ended within timeoutMs', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/fm-script?timeoutMs=20',
      headers: auth,
      payload: { fmScript: 'HOLD' },
    });
    expect(response.statusCode).toBe(202);
    const body = response.json() as { id: number };
    expect(body).toEqual({ id: expect.any(Number), status: 'RUNNING' });
    expect(response.headers.location).toBe(`/api/tasks/${body.id}`);
    t.executor.release();
    expect(await waitEnded(body.id)).toMatchObject({ status: 'FINISHED' });
  });

  it('timeoutMs=0 does not wait at all', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/fm-script?timeoutMs=0',
      headers: auth,
      payload: { fmScript: 'HOLD' },
    });
    expect(response.statusCode).toBe(202);
  });

  it('waits by default for a task queued behind another', async () => {
    await submit('HOLD');
    await until(() => t.executor.held === 1);
    const registered = nextWaitRegistered();
    const pending = t.app.inject({
      method: 'POST',
      url: '/api/fm-script',
      headers: auth,
      payload: { fmScript: 'PRINT after' },
    });
    await registered;
    t.executor.release();
    const response = await pending;
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ status: 'FINISHED', report: 'after' });
  });
});

describe('5. GET /api/tasks', () => {
  it('lists queued, running and ended tasks newest first, filtered by status', async () => {
    const ok = (await submit('PRINT ok')).json() as { id: number };
    await waitEnded(ok.id);
    const failed = (await submit('FAIL no')).json() as { id: number };
    await waitEnded(failed.id);
    const running = (await submit('HOLD')).json() as { id: number };
    await until(() => t.executor.held === 1);
    const queued = (await submit('PRINT later')).json() as { id: number };

    const all = await t.app.inject({ url: '/api/tasks', headers: auth });
    expect(all.statusCode).toBe(200);
    expect(all.json()).toEqual({
      tasks: [
        { id: queued.id, status: 'RUNNING', queuedAt: ISO },
        { id: running.id, status: 'RUNNING', queuedAt: ISO, startedAt: ISO },
        { id: failed.id, status: 'FAILURE', error: 'no', queuedAt: ISO, startedAt: ISO, finishedAt: ISO },
        { id: ok.id, status: 'FINISHED', report: 'ok', queuedAt: ISO, startedAt: ISO, finishedAt: ISO },
      ],
    });
    const ids = async (status: string) =>
      (
        (await t.app.inject({ url: `/api/tasks?status=${status}`, headers: auth })).json() as {
          tasks: { id: number }[];
        }
      ).tasks.map((task) => task.id);
    expect(await ids('RUNNING')).toEqual([queued.id, running.id]);
    expect(await ids('FINISHED')).toEqual([ok.id]);
    expect(await ids('FAILURE')).toEqual([failed.id]);
  });

  it('an empty device lists nothing', async () => {
    const response = await t.app.inject({ url: '/api/tasks', headers: auth });
    expect(response.json()).toEqual({ tasks: [] });
  });
});

describe('6. GET /health', () => {
  it('answers status ok with the queue and MQTT state, without auth', async () => {
    const { id } = (await submit('HOLD')).json() as { id: number };
    await until(() => t.executor.held === 1);
    await submit('PRINT queued');
    const response = await t.app.inject({ url: '/health' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      status: 'ok',
      deviceId: 'till-1',
      installation: 'cash-register',
      version: expect.any(String),
      executor: 'test',
      auth: 'on',
      uptimeSeconds: expect.any(Number),
      queue: { queued: 1, running: 1, retained: 0, maxQueue: 1000, retain: 128, lastTaskId: id + 1 },
      mqtt: { state: 'disabled' },
    });
  });

  it('shows what the bridge reports', async () => {
    const other = await startTestApp(
      {},
      {},
      { mqttHealth: () => ({ state: 'connected', url: 'mqtt://broker:1883', pending: 2 }) },
    );
    try {
      const response = await other.app.inject({ url: '/health' });
      expect(response.json()).toMatchObject({
        mqtt: { state: 'connected', url: 'mqtt://broker:1883', pending: 2 },
      });
    } finally {
      await other.close();
    }
  });
});

describe('7. GET /metrics', () => {
  it('answers Prometheus text with the task, queue and HTTP metrics', async () => {
    const { id } = (await submit('PRINT x')).json() as { id: number };
    await waitEnded(id);
    const response = await t.app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(response.body).toContain('regbridge_tasks_total{status="FINISHED",device="till-1"} 1');
    expect(response.body).toContain('regbridge_tasks_total{status="FAILURE",device="till-1"} 0');
    expect(response.body).toContain('regbridge_tasks_submitted_total{source="rest",device="till-1"} 1');
    expect(response.body).toContain('regbridge_queue_depth{device="till-1"} 0');
    expect(response.body).toContain('regbridge_tasks_running{device="till-1"} 0');
    expect(response.body).toContain(
      'regbridge_task_execution_seconds_count{device="till-1",status="FINISHED"} 1',
    );
    expect(response.body).toContain('regbridge_task_wait_seconds_count{device="till-1"} 1');
    expect(response.body).toMatch(
      /regbridge_http_requests_total\{method="POST",route="\/api\/vendor-script",status_code="202",device="till-1"\} 1/,
    );
    expect(response.body).toContain('# TYPE regbridge_http_request_duration_seconds histogram');
  });
});

describe('8. /openapi.json and /docs', () => {
  it('describes every route, its responses, the error body and bearer auth', async () => {
    const response = await t.app.inject({ url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json() as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          { security?: unknown; responses: Record<string, { headers?: Record<string, unknown> }> }
        >
      >;
      components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> };
    };
    expect(document.openapi).toBe('3.0.3');
    expect(Object.keys(document.paths).sort()).toEqual(
      [
        '/api/authenticate',
        '/api/fm-script',
        '/api/logout',
        '/api/tasks',
        '/api/tasks/{id}',
        '/api/vendor-script',
        '/docs',
        '/health',
        '/metrics',
        '/openapi.json',
      ].sort(),
    );
    expect(Object.keys(document.paths['/api/authenticate']!).sort()).toEqual(['get', 'post']);
    expect(document.components.securitySchemes).toEqual({
      bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining(['Task', 'Error', 'TaskDoesNotExist', 'Token']),
    );
    const secured = [
      document.paths['/api/vendor-script']!.post!,
      document.paths['/api/fm-script']!.post!,
      document.paths['/api/tasks']!.get!,
      document.paths['/api/tasks/{id}']!.get!,
    ];
    for (const operation of secured) {
      expect(operation.security).toEqual([{ bearerAuth: [] }]);
      expect(operation.responses['401']?.headers).toHaveProperty('WWW-Authenticate');
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '500']));
    }
    // Path and query integers are documented as integers with their bounds.
    const taskGet = document.paths['/api/tasks/{id}']!.get as unknown as {
      parameters: Array<{ name: string; schema: Record<string, unknown> }>;
    };
    const schemaOf = (name: string) => taskGet.parameters.find((p) => p.name === name)?.schema;
    expect(schemaOf('waitMs')).toMatchObject({ type: 'integer', minimum: 0, maximum: 30000 });
    expect(schemaOf('id')).toMatchObject({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    expect(document.paths['/api/authenticate']!.get!.security).toBeUndefined();
    const vendor = document.paths['/api/vendor-script']!.post!.responses;
    expect(Object.keys(vendor).sort()).toEqual([
      '200',
      '202',
      '400',
      '401',
      '409',
      '413',
      '415',
      '500',
      '503',
    ]);
    expect(vendor['202']?.headers).toHaveProperty('Location');
    expect(vendor['503']?.headers).toHaveProperty('Retry-After');
    expect(document.paths['/api/authenticate']!.post!.responses['429']?.headers).toHaveProperty(
      'Retry-After',
    );
    expect(JSON.stringify(document.paths['/api/tasks/{id}']!.get!.responses['404'])).toContain(
      'TaskDoesNotExist',
    );
  });

  it('/docs serves swagger-ui', async () => {
    const response = await t.app.inject({ url: '/docs' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.body).toContain('swagger');
  });
});

describe('--auth off', () => {
  it('needs no token, accepts any credentials and warns at build', async () => {
    const open = await startTestApp({ auth: 'off', users: [] });
    try {
      const response = await open.app.inject({
        method: 'POST',
        url: '/api/vendor-script',
        payload: { vendorScript: 'PRINT open' },
      });
      expect(response.statusCode).toBe(202);
      const list = await open.app.inject({
        url: '/api/tasks',
        headers: { authorization: 'Bearer nonsense' },
      });
      expect(list.statusCode).toBe(200);
      const token = await open.app.inject({
        method: 'GET',
        url: '/api/authenticate',
        payload: { userName: 'x', password: 'y' },
      });
      expect(token.statusCode).toBe(200);
      expect(open.logs.some((line) => line.includes('"level":40') && line.includes('--auth off'))).toBe(true);
    } finally {
      await open.close();
    }
  });
});
