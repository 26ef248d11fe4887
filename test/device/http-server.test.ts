/**
 * The app over a real socket: the vendor's GET-with-body, a long poll whose client goes away,
 * and close() while a long poll is in flight.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp, USER } from '../support/http.ts';
import { until } from '../support/waits.ts';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

let t: TestApp;
let port: number;
let closed = false;

beforeEach(async () => {
  t = await startTestApp();
  closed = false;
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});

afterEach(async () => {
  if (!closed) await t.close();
});

function send(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method,
    path,
    // Node's client neither chunks nor sizes a GET body by itself; real clients send Content-Length.
    headers:
      body === undefined
        ? headers
        : {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            ...headers,
          },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.end(body);
  return { req, answer };
}

async function token(): Promise<string> {
  const { answer } = send('GET', '/api/authenticate', {}, JSON.stringify(USER));
  const { status, body } = await answer;
  expect(status, body).toBe(200);
  return (JSON.parse(body) as { token: string }).token;
}

/** The next queue.waitForEnd() call: when it has registered, and when it has returned. */
function spyNextWait(): { registered: Promise<void>; returned: Promise<unknown> } {
  const original = t.queue.waitForEnd.bind(t.queue);
  let registered!: () => void;
  let returned!: (value: Promise<unknown>) => void;
  const spy = {
    registered: new Promise<void>((resolve) => {
      registered = resolve;
    }),
    returned: new Promise<unknown>((resolve) => {
      returned = resolve;
    }),
  };
  vi.spyOn(t.queue, 'waitForEnd').mockImplementationOnce((id, ms, signal) => {
    const result = original(id, ms, signal);
    registered();
    returned(result);
    return result;
  });
  return spy;
}

async function holdingTask(auth: Record<string, string>): Promise<number> {
  const { answer } = send('POST', '/api/vendor-script', auth, JSON.stringify({ vendorScript: 'HOLD' }));
  const { status, body, headers } = await answer;
  expect(status).toBe(202);
  const { id } = JSON.parse(body) as { id: number };
  expect(headers.location).toBe(`/api/tasks/${id}`);
  await until(() => t.executor.held === 1);
  return id;
}

it('GET /api/authenticate with a JSON body works over HTTP, and HEAD routes do not exist', async () => {
  expect(await token()).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const { answer } = send('HEAD', '/health');
  expect((await answer).status).toBe(404);
});

it('a long poll whose client disconnects is abandoned, and the service keeps serving', async () => {
  const auth = { authorization: `Bearer ${await token()}` };
  const id = await holdingTask(auth);
  const wait = spyNextWait();
  const poll = send('GET', `/api/tasks/${id}?waitMs=30000`, auth);
  poll.answer.catch(() => undefined);
  await wait.registered;
  poll.req.destroy();
  // Without the abort this would take the whole 30 s and time the test out.
  expect(await wait.returned).toMatchObject({ id, state: 'running' });
  expect(t.logs.some((line) => line.includes('client went away; wait abandoned'))).toBe(true);
  const { answer } = send('GET', `/api/tasks/${id}`, auth);
  const again = await answer;
  expect(again.status).toBe(200);
  expect(JSON.parse(again.body)).toMatchObject({ id, status: 'RUNNING' });
});

it('close() answers in-flight long polls with the current state instead of waiting for them', async () => {
  const auth = { authorization: `Bearer ${await token()}` };
  const id = await holdingTask(auth);
  const wait = spyNextWait();
  const poll = send('GET', `/api/tasks/${id}?waitMs=30000`, auth);
  await wait.registered;
  const closing = t.app.close();
  const answer = await poll.answer;
  await closing;
  closed = true;
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toMatchObject({ id, status: 'RUNNING' });
  t.executor.release();
  await t.queue.stop();
});
