/**
 * Issue 10, items 4, 5 and 7 (docs/security.md, docs/errors.md): what anyone on the store
 * network can send before logging in costs little, GETs with a JSON content type and no body
 * work, and every error, including those node's HTTP parser raises, has the contract's body.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, login, startTestApp, type TestApp, USER } from '../support/http.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const deep = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('item 4: authenticate reads a small body, and no route parses a deeply nested one', () => {
  it('a 2 MB body nested a million levels deep is 413 BODY_TOO_LARGE at authenticate', async () => {
    t = await startTestApp();
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: deep(1_000_000),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({
      statusCode: 413,
      error: 'Payload Too Large',
      code: 'BODY_TOO_LARGE',
      message: 'Request body is larger than 4096 bytes',
    });
  });

  it('--auth-body-limit sets the limit; a credential pair under it still works', async () => {
    t = await startTestApp({ authBodyLimit: 200 });
    const padded = JSON.stringify({ ...USER, pad: 'x'.repeat(200) });
    const tooLarge = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: padded,
    });
    expect(tooLarge.json()).toMatchObject({ statusCode: 413, code: 'BODY_TOO_LARGE' });
    expect((await t.app.inject({ method: 'GET', url: '/api/authenticate', payload: USER })).statusCode).toBe(
      200,
    );
  });

  it('a body nested deeper than --max-json-depth is refused before it is parsed', async () => {
    t = await startTestApp({ maxJsonDepth: 8 });
    const auth = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: `{"userName":"a","password":"b","x":${deep(9)}}`,
    });
    expect(auth.json()).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'INVALID_REQUEST',
      message: 'Body is nested deeper than 8 levels',
    });
    const token = await login(t.app);
    const script = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: `{"vendorScript":"PRINT x","x":${deep(200_000)}}`,
    });
    expect(script.json()).toMatchObject({ statusCode: 400, message: 'Body is nested deeper than 8 levels' });
    // Brackets inside strings are text, not nesting.
    const inString = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: bearer(token),
      payload: { vendorScript: `PRINT ${deep(50)} \\" [[[[` },
    });
    expect(inString.statusCode).toBe(202);
    // Nesting up to the limit is fine.
    const atLimit = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: `{"userName":"${USER.userName}","password":"${USER.password}","x":${deep(7)}}`,
    });
    expect(atLimit.statusCode).toBe(200);
  });

  it('a route that reads no body never parses one: /health answers 200 to a deep 2 MB body', async () => {
    t = await startTestApp();
    const response = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'content-type': 'application/json' },
      payload: deep(1_000_000),
    });
    expect(response.statusCode).toBe(200);
  });

  it('an unmatched request never has its body parsed: 404, whatever it carries', async () => {
    t = await startTestApp();
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/no-such-route',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('item 5: GET with Content-Type: application/json and no body', () => {
  it('is not 400 on /api/tasks/{id}, /api/tasks, /health and /metrics', async () => {
    t = await startTestApp();
    const token = await login(t.app);
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: bearer(token),
      payload: { vendorScript: 'PRINT x' },
    });
    const { id } = created.json() as { id: number };
    const headers = { ...bearer(token), 'content-type': 'application/json', 'content-length': '0' };
    for (const [url, status] of [
      [`/api/tasks/${id}`, 200],
      ['/api/tasks', 200],
      ['/health', 200],
      ['/metrics', 200],
      ['/api/tasks/999', 404],
    ] as const) {
      const response = await t.app.inject({ method: 'GET', url, headers, payload: '' });
      expect(response.statusCode, url).toBe(status);
    }
  });

  it('authenticate by GET with a body keeps working; with an empty body it names the missing field', async () => {
    t = await startTestApp();
    expect((await t.app.inject({ method: 'GET', url: '/api/authenticate', payload: USER })).statusCode).toBe(
      200,
    );
    const empty = await t.app.inject({
      method: 'GET',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json', 'content-length': '0' },
      payload: '',
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    // POST with an empty JSON body stays an error about the body.
    const post = await t.app.inject({
      method: 'POST',
      url: '/api/authenticate',
      headers: { 'content-type': 'application/json', 'content-length': '0' },
      payload: '',
    });
    expect(post.json()).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'INVALID_REQUEST',
      message: 'Body is empty but Content-Type is application/json',
    });
  });
});

/** Sends raw bytes to a listening app and returns the status and parsed body of its answer. */
async function raw(port: number, request: string): Promise<{ status: number; body: unknown; head: string }> {
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.end(request);
  });
  const [head = '', body = ''] = text.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), body: JSON.parse(body), head };
}

describe('item 7: every error has the contract body', () => {
  it('parser errors, bad percent-encoding, over-long ids and over-large headers', async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as { port: number }).port;
    const token = await login(t.app);

    const badMethod = await raw(port, 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(badMethod.status).toBe(400);
    expect(badMethod.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'MALFORMED_HTTP',
      message: 'The request is not valid HTTP/1.1 (HPE_INVALID_METHOD)',
    });

    const badUrl = await raw(
      port,
      `GET /api/tasks/%ZZ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(badUrl.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'INVALID_REQUEST',
      message: 'The path is not valid percent-encoding',
    });

    const longId = await raw(
      port,
      `GET /api/tasks/${'1'.repeat(1025)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(longId.status).toBe(400);
    expect(longId.body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'INVALID_REQUEST' });

    const hugeHeader = await raw(
      port,
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(hugeHeader.status).toBe(431);
    expect(hugeHeader.body).toEqual({
      statusCode: 431,
      error: 'Request Header Fields Too Large',
      code: 'HEADERS_TOO_LARGE',
      message: 'The request line and headers are over the size limit',
    });

    const hugeUrl = await raw(port, `GET /api/tasks/${'9'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(hugeUrl.body).toMatchObject({ statusCode: 431, code: 'HEADERS_TOO_LARGE' });

    // The service keeps serving.
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
  });
});
