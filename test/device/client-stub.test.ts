/**
 * DeviceClient against a scripted HTTP server on a real socket: the exact requests it sends
 * (GET authenticate with a JSON body, Bearer header, long poll), its re-authentication, and how
 * every kind of failure maps to a RestException subclass.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionException,
  DeviceClient,
  InternalErrorException,
  RestException,
  TaskDoesNotExistException,
  TaskProcessingException,
  TimeoutException,
} from '../../src/client/index.ts';

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
  body: unknown;
}

interface Answer {
  status: number;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
  /** Never answer (to exercise the client's request time-out). */
  hang?: boolean;
}

let server: Server;
let port: number;
let seen: Seen[] = [];
let handle: (req: Seen) => Answer = () => ({ status: 500, json: {} });
const clients: DeviceClient[] = [];

function client(...args: [] | [string, string]): DeviceClient {
  const c =
    args.length === 2
      ? new DeviceClient('127.0.0.1', port, args[0], args[1])
      : new DeviceClient('127.0.0.1', port);
  clients.push(c);
  return c;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

const task = (id: number, status: string, extra: Record<string, unknown> = {}) => ({
  id,
  status,
  queuedAt: new Date(0).toISOString(),
  ...extra,
});

/** A device stub with token `t1`, `t2`, ... handed out in order. */
function authStub(rest: (req: Seen) => Answer): { tokensIssued: () => number } {
  let issued = 0;
  handle = (req) => {
    if (req.path.endsWith('/api/authenticate')) {
      issued += 1;
      return { status: 200, json: { token: `t${issued}`, tokenType: 'Bearer', expiresIn: 1 } };
    }
    return rest(req);
  };
  return { tokensIssued: () => issued };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void (async () => {
      const entry: Seen = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        body: await readBody(req),
      };
      seen.push(entry);
      const answer = handle(entry);
      if (answer.hang) return;
      const body = answer.text ?? JSON.stringify(answer.json);
      res.writeHead(answer.status, {
        'content-type': answer.text === undefined ? 'application/json' : 'text/html',
        ...answer.headers,
      });
      res.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  server.closeAllConnections();
  seen = [];
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('authentication', () => {
  it('authenticates lazily with GET and a JSON body, then sends the Bearer token', async () => {
    authStub(() => ({ status: 202, json: { id: 7, status: 'RUNNING' } }));
    const c = client('alice', 's3cr:et');
    expect(seen).toHaveLength(0);
    expect(await c.vendorScript('PRINT a')).toBe(7);
    expect(seen[0]).toMatchObject({
      method: 'GET',
      path: '/api/authenticate',
      contentType: 'application/json',
      body: { userName: 'alice', password: 's3cr:et' },
    });
    expect(seen[1]).toMatchObject({
      method: 'POST',
      path: '/api/vendor-script',
      authorization: 'Bearer t1',
      body: { vendorScript: 'PRINT a' },
    });
  });

  it('shares one authentication between concurrent first calls', async () => {
    const stub = authStub((req) => ({ status: 200, json: task(Number(req.path.split('/')[3]), 'RUNNING') }));
    const c = client('alice', 'pw');
    await Promise.all([1, 2, 3].map((id) => c.getTaskStatus(id)));
    expect(stub.tokensIssued()).toBe(1);
  });

  it('renews the token once after a 401 and retries the request', async () => {
    let rejectNext = false;
    const stub = authStub((req) => {
      if (rejectNext && req.authorization === 'Bearer t1') {
        return {
          status: 401,
          json: { statusCode: 401, error: 'Unauthorized', code: 'UNAUTHORIZED', message: 'expired' },
        };
      }
      return { status: 200, json: task(5, 'FINISHED', { report: 'ok' }) };
    });
    const c = client('alice', 'pw');
    expect((await c.getTaskStatus(5)).status).toBe('FINISHED');
    rejectNext = true;
    expect(await c.waitForTask(5)).toBe('ok');
    expect(stub.tokensIssued()).toBe(2);
    expect(seen.map((s) => s.authorization ?? s.path)).toEqual([
      '/api/authenticate',
      'Bearer t1',
      'Bearer t1',
      '/api/authenticate',
      'Bearer t2',
    ]);
  });

  it('gives up after one renewal when the server keeps answering 401', async () => {
    const stub = authStub(() => ({
      status: 401,
      json: { statusCode: 401, error: 'Unauthorized', code: 'UNAUTHORIZED', message: 'no' },
      headers: { 'www-authenticate': 'Bearer' },
    }));
    const error = await client('alice', 'pw')
      .getTaskStatus(1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RestException);
    expect(error).toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED', serverMessage: 'no' });
    expect(stub.tokensIssued()).toBe(2);
  });

  it('reports wrong credentials with the server code and message', async () => {
    handle = () => ({
      status: 401,
      json: {
        statusCode: 401,
        error: 'Unauthorized',
        code: 'INVALID_CREDENTIALS',
        message: 'Wrong user name or password',
      },
    });
    const error = await client('alice', 'bad')
      .vendorScript('PRINT a')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RestException);
    expect(error).toMatchObject({
      statusCode: 401,
      code: 'INVALID_CREDENTIALS',
      serverMessage: 'Wrong user name or password',
    });
  });

  it('sends no Authorization header and never authenticates without credentials', async () => {
    handle = () => ({ status: 200, json: task(3, 'FINISHED', { report: '' }) });
    expect(await client().waitForTask(3)).toBe('');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.authorization).toBeUndefined();
  });
});

describe('waitForTask and processFmScript', () => {
  it('long-polls with waitMs and maps each end status', async () => {
    handle = (req) => {
      const id = Number(/\/api\/tasks\/(\d+)/.exec(req.path)?.[1]);
      if (id === 1) return { status: 200, json: task(1, 'FAILURE', { error: 'paper out' }) };
      if (id === 2) return { status: 200, json: task(2, 'PAUSED') };
      return {
        status: 404,
        json: {
          statusCode: 404,
          error: 'Not Found',
          code: 'TASK_DOES_NOT_EXIST',
          message: 'gone',
          id,
          status: 'TASK_DOES_NOT_EXIST',
        },
      };
    };
    const c = client();
    const failure = await c.waitForTask(1).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(TaskProcessingException);
    expect(failure).toMatchObject({ taskId: 1, taskError: 'paper out' });
    expect(seen[0]?.path).toMatch(/^\/api\/tasks\/1\?waitMs=\d+$/);

    const odd = await c.waitForTask(2).catch((e: unknown) => e);
    expect(odd).toBeInstanceOf(InternalErrorException);
    expect((odd as Error).message).toContain('PAUSED');

    expect(await c.getTaskStatus(9)).toEqual({ id: 9, status: 'TASK_DOES_NOT_EXIST' });
    const missing = await c.waitForTask(9).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TaskDoesNotExistException);
    expect(missing).toMatchObject({ taskId: 9, statusCode: 404, code: 'TASK_DOES_NOT_EXIST' });
  });

  it('polls without waitMs when longPoll is off, and times out on a task that never ends', async () => {
    handle = () => ({ status: 200, json: task(4, 'RUNNING') });
    const error = await client()
      .waitForTask(4, { longPoll: false, intervalMs: 20, timeoutMs: 150 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutException);
    expect(error).toMatchObject({ taskId: 4, code: 'TIMEOUT' });
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.every((s) => s.path === '/api/tasks/4')).toBe(true);
  });

  it('continues an fm-script answered 202 with waitForTask', async () => {
    handle = (req) =>
      req.path.startsWith('/api/fm-script')
        ? { status: 202, json: { id: 12, status: 'RUNNING' }, headers: { location: '/api/tasks/12' } }
        : { status: 200, json: task(12, 'FINISHED', { report: 'line 1\nline 2' }) };
    expect(await client().processFmScript('PRINT line 1\nPRINT line 2', { timeoutMs: 5000 })).toBe(
      'line 1\nline 2',
    );
    expect(seen[0]).toMatchObject({
      method: 'POST',
      path: '/api/fm-script?timeoutMs=5000',
      body: { fmScript: 'PRINT line 1\nPRINT line 2' },
    });
    expect(seen[1]?.path).toMatch(/^\/api\/tasks\/12\?waitMs=\d+$/);
  });

  it('sends the Idempotency-Key header', async () => {
    handle = () => ({ status: 200, json: { id: 3, status: 'RUNNING' } });
    const c = client();
    expect(await c.vendorScript('PRINT x', 'key-1')).toBe(3);
    await c.vendorScript('PRINT x');
    expect(seen.map((s) => s.idempotencyKey)).toEqual(['key-1', undefined]);
  });
});

describe('failures', () => {
  it('turns a non-JSON 5xx into a RestException with its status', async () => {
    handle = () => ({ status: 502, text: '<html>Bad Gateway</html>' });
    const error = await client()
      .getTaskStatus(1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RestException);
    expect(error).toMatchObject({ statusCode: 502, code: 'HTTP_ERROR' });
  });

  it('turns a 200 with a body of the wrong shape into INVALID_RESPONSE', async () => {
    handle = () => ({ status: 200, json: { hello: 'world' } });
    const error = await client()
      .getTaskStatus(1)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 200, code: 'INVALID_RESPONSE' });
  });

  it('carries Retry-After of 503 QUEUE_FULL', async () => {
    handle = () => ({
      status: 503,
      json: { statusCode: 503, error: 'Service Unavailable', code: 'QUEUE_FULL', message: 'full' },
      headers: { 'retry-after': '3' },
    });
    const error = await client()
      .vendorScript('PRINT x')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 503, code: 'QUEUE_FULL', retryAfterSeconds: 3 });
  });

  it('turns a request that gets no answer in time into a TimeoutException', async () => {
    handle = () => ({ status: 200, hang: true });
    const c = new DeviceClient('127.0.0.1', port, { requestTimeoutMs: 200 });
    clients.push(c);
    const error = await c.getTaskStatus(1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutException);
    expect((error as TimeoutException).taskId).toBeUndefined();
  });

  it('turns a refused connection into a ConnectionException', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const c = new DeviceClient('127.0.0.1', freePort, 'alice', 'pw');
    clients.push(c);
    const error = await c.processFmScript('PRINT x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionException);
    expect(error).toMatchObject({ statusCode: 0, code: 'CONNECTION_ERROR' });
  });

  it('refuses calls after close()', async () => {
    handle = () => ({ status: 200, json: task(1, 'RUNNING') });
    const c = client();
    await c.getTaskStatus(1);
    await c.close();
    await expect(c.getTaskStatus(1)).rejects.toBeInstanceOf(ConnectionException);
  });
});

describe('construction', () => {
  it('builds from a URL with base path and credentials, and validates its arguments', async () => {
    authStub(() => ({ status: 200, json: task(1, 'RUNNING') }));
    const c = DeviceClient.fromUrl(`http://bob:p%40ss@127.0.0.1:${port}/device/`);
    clients.push(c);
    expect(c.origin).toBe(`http://127.0.0.1:${port}`);
    await c.getTaskStatus(1);
    expect(seen[0]).toMatchObject({
      path: '/device/api/authenticate',
      body: { userName: 'bob', password: 'p@ss' },
    });
    expect(seen[1]?.path).toBe('/device/api/tasks/1');
    expect(new DeviceClient('::1', 8080).origin).toBe('http://[::1]:8080');
    expect(new DeviceClient('pos-1', 443, { https: true }).origin).toBe('https://pos-1:443');
    expect(() => new DeviceClient('127.0.0.1', 0)).toThrow(TypeError);
    expect(() => DeviceClient.fromUrl('ftp://x')).toThrow(TypeError);
  });
});
