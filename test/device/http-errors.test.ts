/**
 * Every error of docs/api.md, with its exact body and headers, and that the service
 * keeps serving after each.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, login, startTestApp, type TestApp, USER } from '../support/http.ts';

let t: TestApp;
let auth: Record<string, string>;

beforeEach(async () => {
  t = await startTestApp({ maxScriptBytes: 1000 });
  auth = bearer(await login(t.app));
});

afterEach(async () => {
  await t.close();
});

const invalid = (message: string) => ({
  statusCode: 400,
  error: 'Bad Request',
  code: 'INVALID_REQUEST',
  message,
});

/** A good request still succeeds: bad input never breaks the service. */
async function stillServes(): Promise<void> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/fm-script',
    headers: auth,
    payload: { fmScript: 'PRINT still here' },
  });
  expect(response.statusCode).toBe(200);
  expect(response.json()).toMatchObject({ status: 'FINISHED', report: 'still here' });
}

function post(url: string, payload: string | object, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url, headers: { ...auth, ...headers }, payload });
}

describe('400 INVALID_REQUEST', () => {
  const cases: Array<[string, () => ReturnType<typeof post>, string]> = [
    [
      'malformed JSON',
      () => post('/api/vendor-script', '{"vendorScript": "PRINT', { 'content-type': 'application/json' }),
      'Body is not valid JSON',
    ],
    [
      'empty JSON body',
      () => post('/api/vendor-script', '', { 'content-type': 'application/json' }),
      'Body is empty but Content-Type is application/json',
    ],
    [
      'prototype poisoning',
      () =>
        post('/api/vendor-script', '{"__proto__": {"admin": true}, "vendorScript": "PRINT x"}', {
          'content-type': 'application/json',
        }),
      'Body is not valid JSON',
    ],
    ['missing field', () => post('/api/vendor-script', {}), "body field 'vendorScript' is required"],
    [
      'JSON null',
      () => post('/api/vendor-script', 'null', { 'content-type': 'application/json' }),
      'body must be a JSON object',
    ],
    [
      'GET /api/authenticate without a body',
      () => t.app.inject({ method: 'GET', url: '/api/authenticate' }),
      'body must be a JSON object',
    ],
    [
      'over-long Idempotency-Key',
      () => post('/api/vendor-script', { vendorScript: 'PRINT x' }, { 'idempotency-key': 'k'.repeat(256) }),
      "header 'idempotency-key' must be at most 255 characters",
    ],
    [
      'mistyped field',
      () => post('/api/vendor-script', { vendorScript: 42 }),
      "body field 'vendorScript' must be a string",
    ],
    ['body not an object', () => post('/api/vendor-script', [1, 2]), 'body must be a JSON object'],
    [
      'empty script',
      () => post('/api/vendor-script', { vendorScript: '' }),
      "body field 'vendorScript' must not be empty",
    ],
    [
      'blank script',
      () => post('/api/fm-script', { fmScript: ' \r\n\t' }),
      "body field 'fmScript' must not be empty",
    ],
    [
      'fmScript missing',
      () => post('/api/fm-script', { vendorScript: 'PRINT x' }),
      "body field 'fmScript' is required",
    ],
    [
      'timeoutMs over the maximum',
      () => post('/api/fm-script?timeoutMs=600001', { fmScript: 'PRINT x' }),
      "query parameter 'timeoutMs' must be an integer from 0 to 600000",
    ],
    [
      'empty Idempotency-Key',
      () => post('/api/vendor-script', { vendorScript: 'PRINT x' }, { 'idempotency-key': '' }),
      "header 'idempotency-key' must not be empty",
    ],
    [
      'userName missing and password mistyped',
      () => t.app.inject({ method: 'POST', url: '/api/authenticate', payload: { password: 7 } }),
      "body field 'userName' is required; body field 'password' must be a string",
    ],
  ];
  for (const [name, request, message] of cases) {
    it(name, async () => {
      const response = await request();
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual(invalid(message));
      await stillServes();
    });
  }

  for (const id of [
    'abc',
    '1.5',
    '-1',
    '0',
    '007',
    '1e3',
    '9007199254740992',
    '99999999999999999999',
    '9'.repeat(300),
  ]) {
    it(`task id ${id.slice(0, 24)}`, async () => {
      const response = await t.app.inject({ url: `/api/tasks/${id}`, headers: auth });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual(invalid("path parameter 'id' must be a positive integer below 2^53"));
      await stillServes();
    });
  }

  for (const waitMs of ['-1', '30001', 'soon', '1.5', '']) {
    it(`waitMs=${waitMs}`, async () => {
      const response = await t.app.inject({ url: `/api/tasks/1?waitMs=${waitMs}`, headers: auth });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual(invalid("query parameter 'waitMs' must be an integer from 0 to 30000"));
    });
  }

  it('unknown status filter', async () => {
    const response = await t.app.inject({ url: '/api/tasks?status=DONE', headers: auth });
    expect(response.json()).toEqual(invalid("query parameter 'status' must be RUNNING, FINISHED or FAILURE"));
  });
});

describe('401 INVALID_CREDENTIALS', () => {
  for (const [name, credentials] of [
    ['wrong password', { userName: USER.userName, password: 'wrong' }],
    ['unknown user', { userName: 'mallory', password: USER.password }],
    ['empty strings', { userName: '', password: '' }],
  ] as const) {
    it(name, async () => {
      const response = await t.app.inject({ method: 'GET', url: '/api/authenticate', payload: credentials });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({
        statusCode: 401,
        error: 'Unauthorized',
        code: 'INVALID_CREDENTIALS',
        message: 'Wrong user name or password',
      });
      expect(response.headers['www-authenticate']).toBe('Bearer');
    });
  }
});

describe('401 UNAUTHORIZED with WWW-Authenticate: Bearer', () => {
  const unauthorized = (message: string) => ({
    statusCode: 401,
    error: 'Unauthorized',
    code: 'UNAUTHORIZED',
    message,
  });
  const missing = unauthorized(
    'Missing bearer token: send "Authorization: Bearer <token>" from /api/authenticate',
  );
  const malformed = unauthorized('Malformed Authorization header: expected "Bearer <token>"');
  const unknown = unauthorized('Unknown or expired bearer token: authenticate again');
  const cases: Array<[string, Record<string, string>, object]> = [
    ['missing', {}, missing],
    ['empty', { authorization: '' }, missing],
    ['another scheme', { authorization: 'Basic YWxpY2U6cHc=' }, malformed],
    ['scheme without token', { authorization: 'Bearer' }, malformed],
    ['forged', { authorization: `Bearer ${'A'.repeat(43)}` }, unknown],
    ['not a token at all', { authorization: 'Bearer ../../etc/passwd' }, unknown],
  ];
  for (const [name, headers, body] of cases) {
    for (const [method, url] of [
      ['GET', '/api/tasks'],
      ['GET', '/api/tasks/1'],
      ['POST', '/api/vendor-script'],
      ['POST', '/api/fm-script'],
    ] as const) {
      it(`${name}: ${method} ${url}`, async () => {
        const response = await t.app.inject({
          method,
          url,
          headers,
          payload: method === 'POST' ? { vendorScript: 'PRINT x' } : undefined,
        });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual(body);
        expect(response.headers['www-authenticate']).toBe('Bearer');
      });
    }
  }

  it('a token of another device is unknown here', async () => {
    const other = await startTestApp();
    try {
      const foreign = await login(other.app);
      const response = await t.app.inject({ url: '/api/tasks', headers: bearer(foreign) });
      expect(response.json()).toEqual(unknown);
    } finally {
      await other.close();
    }
  });

  it('the scheme is case-insensitive', async () => {
    const token = auth.authorization!.slice('Bearer '.length);
    const response = await t.app.inject({ url: '/api/tasks', headers: { authorization: `bearer ${token}` } });
    expect(response.statusCode).toBe(200);
  });

  it('the check runs before the body is parsed', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(response.json()).toEqual(missing);
  });
});

describe('404', () => {
  it('TASK_DOES_NOT_EXIST carries id and status', async () => {
    const response = await t.app.inject({ url: '/api/tasks/12345', headers: auth });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'TASK_DOES_NOT_EXIST',
      message: 'Task 12345 does not exist',
      id: 12345,
      status: 'TASK_DOES_NOT_EXIST',
    });
  });

  it('TASK_DOES_NOT_EXIST for an id evicted from the retention window, with and without waitMs', async () => {
    const small = await startTestApp({ retain: 1 });
    try {
      const token = bearer(await login(small.app));
      const run = async (script: string) =>
        (
          await small.app.inject({
            method: 'POST',
            url: '/api/fm-script',
            headers: token,
            payload: { fmScript: script },
          })
        ).json() as { id: number };
      const first = await run('PRINT 1');
      const second = await run('PRINT 2');
      for (const url of [`/api/tasks/${first.id}`, `/api/tasks/${first.id}?waitMs=1000`]) {
        const response = await small.app.inject({ url, headers: token });
        expect(response.statusCode).toBe(404);
        expect(response.json()).toMatchObject({
          code: 'TASK_DOES_NOT_EXIST',
          id: first.id,
          status: 'TASK_DOES_NOT_EXIST',
        });
      }
      expect((await small.app.inject({ url: `/api/tasks/${second.id}`, headers: token })).statusCode).toBe(
        200,
      );
    } finally {
      await small.close();
    }
  });

  for (const [method, url] of [
    ['GET', '/nope'],
    // DELETE /api/tasks/{id} is a route since v1.1 (cancel); another method stands in for it.
    ['PUT', '/api/tasks/1'],
    ['POST', '/health'],
    ['GET', '/api/tasks/1/extra'],
  ] as const) {
    it(`ROUTE_NOT_FOUND: ${method} ${url}`, async () => {
      const response = await t.app.inject({ method, url });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({
        statusCode: 404,
        error: 'Not Found',
        code: 'ROUTE_NOT_FOUND',
        message: `No route for ${method} ${url}`,
      });
    });
  }
});

describe('409 IDEMPOTENCY_CONFLICT', () => {
  it('the same key with another script', async () => {
    const first = await post('/api/vendor-script', { vendorScript: 'PRINT a' }, { 'idempotency-key': 'k' });
    const { id } = first.json() as { id: number };
    const response = await post(
      '/api/vendor-script',
      { vendorScript: 'PRINT b' },
      { 'idempotency-key': 'k' },
    );
    expect(response.statusCode).toBe(409);
    expect(response.json()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'IDEMPOTENCY_CONFLICT',
      message: `Idempotency-Key was first used for task ${id} with a different script`,
      id,
    });
    expect(t.queue.list()).toHaveLength(1);
    await stillServes();
  });
});

describe('413 SCRIPT_TOO_LARGE', () => {
  it('a script over maxScriptBytes (counted in UTF-8 bytes)', async () => {
    // 334 euro signs are 1002 bytes of UTF-8 but only 334 characters.
    const response = await post('/api/vendor-script', { vendorScript: `PRINT ${'€'.repeat(334)}` });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({
      statusCode: 413,
      error: 'Payload Too Large',
      code: 'SCRIPT_TOO_LARGE',
      message: "body field 'vendorScript' is 1008 bytes of UTF-8; the limit is 1000",
    });
    expect(t.queue.list()).toHaveLength(0);
    await stillServes();
  });

  it('a script of exactly maxScriptBytes is accepted', async () => {
    const response = await post('/api/vendor-script', { vendorScript: `PRINT ${'x'.repeat(994)}` });
    expect(response.statusCode).toBe(202);
  });

  it('a huge body is refused by the body limit', async () => {
    const response = await post('/api/fm-script', { fmScript: `PRINT ${'x'.repeat(200_000)}` });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({
      statusCode: 413,
      error: 'Payload Too Large',
      code: 'SCRIPT_TOO_LARGE',
      message: 'Request body is larger than 71536 bytes',
    });
    await stillServes();
  });

  it('the default limit (1 MiB) refuses a 3 MiB script', async () => {
    const big = await startTestApp();
    try {
      const response = await big.app.inject({
        method: 'POST',
        url: '/api/vendor-script',
        headers: bearer(await login(big.app)),
        payload: { vendorScript: 'x'.repeat(3 * 1024 * 1024) },
      });
      expect(response.statusCode).toBe(413);
      expect(response.json()).toMatchObject({ code: 'SCRIPT_TOO_LARGE' });
    } finally {
      await big.close();
    }
  });
});

describe('415 UNSUPPORTED_MEDIA_TYPE', () => {
  it('a body that is not JSON', async () => {
    const response = await post('/api/vendor-script', 'PRINT x', { 'content-type': 'text/plain' });
    expect(response.statusCode).toBe(415);
    expect(response.json()).toEqual({
      statusCode: 415,
      error: 'Unsupported Media Type',
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'Content-Type must be application/json',
    });
    await stillServes();
  });
});

describe('503 QUEUE_FULL', () => {
  it('answers Retry-After when --max-queue tasks wait', async () => {
    const full = await startTestApp({ maxQueue: 2 }, {}, { startQueue: false });
    try {
      const token = bearer(await login(full.app));
      const submit = () =>
        full.app.inject({
          method: 'POST',
          url: '/api/vendor-script',
          headers: token,
          payload: { vendorScript: 'PRINT x' },
        });
      expect((await submit()).statusCode).toBe(202);
      expect((await submit()).statusCode).toBe(202);
      const response = await submit();
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.json()).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        code: 'QUEUE_FULL',
        message: 'The queue holds 2 tasks; try again later',
      });
      full.queue.start();
      const sync = await full.app.inject({
        method: 'POST',
        url: '/api/fm-script',
        headers: token,
        payload: { fmScript: 'PRINT x' },
      });
      expect(sync.statusCode).toBe(200);
    } finally {
      await full.close();
    }
  });
});

describe('500 INTERNAL_ERROR', () => {
  it('hides the bug from the client and logs it with its stack', async () => {
    const broken = await startTestApp(
      {},
      {},
      {
        mqttHealth: () => {
          throw new Error('bridge exploded');
        },
      },
    );
    try {
      const response = await broken.app.inject({ url: '/health' });
      expect(response.statusCode).toBe(500);
      expect(response.json()).toEqual({
        statusCode: 500,
        error: 'Internal Server Error',
        code: 'INTERNAL_ERROR',
        message: 'Internal error; the service logged the details',
      });
      const logged = broken.logs.find((line) => line.includes('bridge exploded'));
      expect(logged).toBeDefined();
      expect(JSON.parse(logged!)).toMatchObject({
        level: 50,
        err: { stack: expect.stringContaining('Error: bridge exploded') },
      });
      expect((await broken.app.inject({ url: '/metrics' })).statusCode).toBe(200);
    } finally {
      await broken.close();
    }
  });
});
