/**
 * REST fuzz (issue 10; docs/security.md, "Regression suites"): thousands of generated requests
 * across every route, through app.inject() and as raw bytes over a real socket (where node's
 * HTTP parser sees them first). Whatever arrives: never a 5xx, and every error is the contract's
 * body `{statusCode, error, code, message}` with a registered code and its status. fast-check
 * picks a new seed every run and prints it with the shrunk request when a run fails.
 */
import { STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorRegistry } from '../../src/errors.ts';
import { login, startTestApp, type TestApp, USER } from '../support/http.ts';

const INJECT_RUNS = 2000;
const RAW_RUNS = 400;

let t: TestApp;
let token: string;
const counted = { inject: 0, raw: 0 };

beforeAll(async () => {
  // fm-script waits at most 1 s; scripts end at once (the test executor), so nothing hangs.
  t = await startTestApp({ fmScriptTimeout: '1s', maxQueue: 100_000, retain: 128 });
  token = await login(t.app);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
  // The counts are part of the issue's closing note: print them.
  console.log(`rest-fuzz: ${counted.inject} injected and ${counted.raw} raw requests`);
});

/** Extra fields some codes carry (docs/errors.md). */
const EXTRA: Record<string, string[]> = {
  TASK_DOES_NOT_EXIST: ['id', 'status'],
  IDEMPOTENCY_CONFLICT: ['id'],
};

/** Throws (with the request) unless `status` and `body` are acceptable. */
function checkAnswer(what: string, status: number, body: string, method: string): void {
  expect(status, what).toBeLessThan(500);
  expect(status, what).toBeGreaterThanOrEqual(200);
  if (status < 400 || method === 'HEAD') return;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    throw new Error(`${what}: error body is not JSON: ${body.slice(0, 200)}`);
  }
  const code = parsed.code as keyof typeof errorRegistry;
  const entry = errorRegistry[code] as { statusCode?: number; error?: string } | undefined;
  expect(entry, `${what}: unregistered code in ${body.slice(0, 300)}`).toBeDefined();
  expect(parsed.statusCode, what).toBe(status);
  expect(entry?.statusCode, what).toBe(status);
  expect(parsed.error, what).toBe(STATUS_CODES[status]);
  expect(parsed.error, what).toBe(entry?.error);
  expect(typeof parsed.message, what).toBe('string');
  expect(Object.keys(parsed).sort(), what).toEqual(
    ['code', 'error', 'message', 'statusCode', ...(EXTRA[code] ?? [])].sort(),
  );
}

const ROUTES = [
  '/api/authenticate',
  '/api/vendor-script',
  '/api/fm-script',
  '/api/tasks',
  '/api/tasks/{id}',
  '/health',
  '/metrics',
  '/openapi.json',
  '/docs',
  '/docs/{any}',
  '/{any}',
  '/api/{any}',
];

const idValue = fc.oneof(
  fc.integer({ min: -5, max: 2 ** 53 + 5 }).map(String),
  fc.constantFrom('0', '1', '-1', '1e3', '0x10', '9007199254740993', ' 1', '1.5', 'NaN', ''),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.constantFrom('%ZZ', '%', '%00', '..', '%2F', '%E2%82', 'a%20b'),
  fc.nat({ max: 2000 }).map((n) => '7'.repeat(n)),
);

const queryValue = fc.oneof(
  fc.integer({ min: -10, max: 700_000 }).map(String),
  fc.constantFrom('RUNNING', 'FINISHED', 'FAILURE', 'queued', '', '1e2', '0.5', 'true'),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
);

const query = fc
  .array(fc.tuple(fc.constantFrom('waitMs', 'timeoutMs', 'status', 'x', 'waitMs'), queryValue), {
    maxLength: 3,
  })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`));

const path = fc
  .tuple(fc.constantFrom(...ROUTES), idValue, fc.string({ maxLength: 30 }).map(encodeURIComponent), query)
  .map(([route, id, any, q]) => route.replace('{id}', id).replace('{any}', any) + q);

const script = fc.oneof(
  fc.constantFrom('PRINT fuzz', 'FAIL fuzz', '', '   ', 'PRINT é€😀'),
  fc.string({ maxLength: 200 }).filter((s) => !/\b(HOLD|SLEEP)\b/i.test(s)),
);

const jsonBody = fc.oneof(
  fc.record(
    {
      userName: fc.oneof(fc.constant(USER.userName), fc.string({ maxLength: 20 }), fc.integer()),
      password: fc.oneof(fc.constant(USER.password), fc.string({ maxLength: 20 }), fc.constant(null)),
    },
    { requiredKeys: [] },
  ),
  fc.record({ vendorScript: script }, { requiredKeys: [] }),
  fc.record({ fmScript: script }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 4 }),
  fc.dictionary(
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'vendorScript'),
    fc.jsonValue({ maxDepth: 2 }),
  ),
);

const body = fc.oneof(
  { weight: 5, arbitrary: jsonBody.map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
  { weight: 1, arbitrary: fc.nat({ max: 400 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
  { weight: 1, arbitrary: fc.constant('{"__proto__":{"x":1},"vendorScript":"PRINT x"}') },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

const contentType = fc.option(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    'application/jsonx',
    'APPLICATION/JSON',
    '',
  ),
  { nil: undefined },
);

const authorization = fc.option(
  fc.oneof(
    fc.constant('VALID'),
    fc.constantFrom('Bearer', 'Bearer ', 'Basic YTpi', 'bearer x', `Bearer ${'A'.repeat(43)}`),
    fc.string({ maxLength: 60 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
  ),
  { nil: undefined },
);

const request = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
  path,
  body,
  contentType,
  authorization,
  idempotencyKey: fc.option(
    fc.string({ maxLength: 300 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
    {
      nil: undefined,
    },
  ),
});

describe('REST fuzz', () => {
  it(`${INJECT_RUNS} generated requests through app.inject(): no 5xx, every error in the contract shape`, async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {};
        if (r.contentType !== undefined) headers['content-type'] = r.contentType;
        if (r.authorization !== undefined) {
          headers.authorization = r.authorization === 'VALID' ? `Bearer ${token}` : r.authorization;
        }
        if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
        const response = await t.app.inject({
          method: r.method as 'GET',
          url: r.path,
          headers,
          ...(r.body !== undefined && r.method !== 'HEAD' && { payload: r.body }),
        });
        counted.inject += 1;
        checkAnswer(`${r.method} ${r.path}`, response.statusCode, response.body, r.method);
      }),
      { numRuns: INJECT_RUNS },
    );
  }, 180_000);

  const token68 = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}$/);
  const rawRequest = fc.record({
    method: fc.oneof(fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'FOO', 'get', 'G ET', ''), token68),
    target: fc.oneof(
      path,
      fc.string({ maxLength: 60 }),
      fc.constantFrom('*', 'http://x/health', '//', '/health#frag', '/%', '/\u00e9'),
    ),
    version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'XYZ'),
    headers: fc.array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom('Content-Type', 'Content-Length', 'Transfer-Encoding', 'Authorization'),
          token68,
        ),
        fc.string({ maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)),
      ),
      { maxLength: 4 },
    ),
    body: fc.option(fc.string({ maxLength: 80 }), { nil: undefined }),
  });

  it(`${RAW_RUNS} generated raw HTTP requests over a socket: no 5xx, every error in the contract shape`, async () => {
    const port = (t.app.server.address() as { port: number }).port;
    await fc.assert(
      fc.asyncProperty(rawRequest, async (r) => {
        const head = [`${r.method} ${r.target} ${r.version}`, 'Host: 127.0.0.1', 'Connection: close'];
        for (const [name, value] of r.headers) head.push(`${name}: ${value}`);
        const raw = `${head.join('\r\n')}\r\n\r\n${r.body ?? ''}`;
        const answer = await exchange(port, raw);
        counted.raw += 1;
        // A request node cannot even frame may get no answer at all; that is not a 5xx.
        if (answer.length === 0) return;
        // Bytes after a complete request are a second request: read the first answer only.
        for (const { status, body } of responses(answer)) {
          checkAnswer(JSON.stringify(raw.slice(0, 200)), status, body, r.method);
        }
      }),
      { numRuns: RAW_RUNS },
    );
  }, 180_000);
});

/** The answers in `data`, framed by Content-Length or chunked encoding. */
function responses(data: Buffer): Array<{ status: number; body: string }> {
  const out: Array<{ status: number; body: string }> = [];
  let rest = data;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete answer: ${rest.toString('utf8').slice(0, 200)}`);
    const head = rest.subarray(0, end).toString('latin1');
    const status = Number(head.split(' ')[1]);
    let bodyStart = end + 4;
    let body: string;
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length) {
      body = rest.subarray(bodyStart, bodyStart + Number(length[1])).toString('utf8');
      bodyStart += Number(length[1]);
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const text = rest.subarray(bodyStart).toString('latin1');
      const finalChunk = text.indexOf('\r\n0\r\n\r\n');
      body = Buffer.from(dechunk(text), 'latin1').toString('utf8');
      bodyStart += finalChunk < 0 ? text.length : finalChunk + 7;
    } else {
      body = rest.subarray(bodyStart).toString('utf8');
      bodyStart = rest.length;
    }
    out.push({ status, body });
    rest = rest.subarray(bodyStart);
  }
  return out;
}

function exchange(port: number, raw: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within 10 s to ${JSON.stringify(raw.slice(0, 200))}`));
    }, 10_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    socket.end(raw);
  });
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}
