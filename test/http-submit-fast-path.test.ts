/**
 * The submission fast path (src/routes/submit-fast-path.ts) answers exactly what fastify's path
 * answers: the same requests, over real sockets, to a device with the fast path and one without,
 * in lockstep; every response byte (the Date header aside), the /metrics text and the request
 * log must match once task ids and clock readings are numbered in order of appearance.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, login, startTestApp, type TestApp, USER } from './support/http.ts';

/** One request on a fresh connection; the raw response once its body is complete. */
function exchange(port: number, request: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = (): void => {
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, end));
      if (length && text.length - end - 4 >= Number(length[1])) done();
    });
    socket.on('end', done);
    socket.on('error', reject);
    socket.write(request);
  });
}

function post(headers: Record<string, string>, body: Buffer | string, path = '/api/vendor-script'): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const lines = [`POST ${path} HTTP/1.1`, 'Host: device'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (headers['transfer-encoding'] === undefined) lines.push(`Content-Length: ${bytes.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), bytes]);
}

/**
 * Numbers task ids (16 digits, from the clock) in order of appearance, and drops what differs
 * between any two devices: clock readings, Date headers, the log's keyed digests of user names.
 */
function normalize(text: string, ids = new Map<string, string>()): string {
  return text
    .replace(/\r\nDate: [^\r]*/g, '')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z/g, '<time>')
    .replace(/"userNameDigest":"[0-9a-f]+"/g, '"userNameDigest":"<digest>"')
    .replace(/\b\d{16}\b/g, (id) => {
      if (!ids.has(id)) ids.set(id, `<id ${ids.size}>`);
      return ids.get(id)!;
    });
}

const JSON_TYPE = { 'content-type': 'application/json' };

describe('POST /api/vendor-script fast path', () => {
  let fast: TestApp;
  let normal: TestApp;
  const answered = { count: 0 };
  const ports = new Map<TestApp, number>();
  const tokens = new Map<TestApp, string>();

  beforeAll(async () => {
    // A small script limit (body limit 66,136 bytes) and queue, so every refusal is reachable.
    const input = { maxScriptBytes: 100, maxQueue: 2, authMaxFailures: 3 };
    fast = await startTestApp(input, { submitFastPathAnswered: answered });
    normal = await startTestApp(input, { submitFastPath: false });
    for (const app of [fast, normal]) {
      await app.app.listen({ port: 0, host: '127.0.0.1' });
      ports.set(app, (app.app.server.address() as { port: number }).port);
      tokens.set(app, await login(app.app));
    }
  });
  afterAll(async () => {
    await fast?.close();
    await normal?.close();
  });

  /** Sends the request built for each app to both; returns both normalized answers. */
  async function both(build: (token: string) => Buffer): Promise<[string, string]> {
    const answers: string[] = [];
    for (const app of [fast, normal]) {
      answers.push(await exchange(ports.get(app)!, build(tokens.get(app)!)));
    }
    return [answers[0]!, answers[1]!];
  }

  const fastNames = new Map<string, string>();
  const normalNames = new Map<string, string>();
  async function same(build: (token: string) => Buffer, expectedStatus: number): Promise<string> {
    const [a, b] = await both(build);
    expect(normalize(a, fastNames)).toBe(normalize(b, normalNames));
    expect(a.slice(0, 12)).toBe(`HTTP/1.1 ${expectedStatus}`);
    return a;
  }

  const auth = (token: string) => ({ ...JSON_TYPE, ...bearer(token) });
  const script = (vendorScript: unknown) => JSON.stringify({ vendorScript });

  it('answers a submission with the same bytes, and takes the fast path for it', async () => {
    const before = answered.count;
    const answer = await same((t) => post(auth(t), script('PRINT x')), 202);
    expect(answer).toMatch(
      /\r\nlocation: \/api\/tasks\/\d+\r\ncontent-type: application\/json; charset=utf-8\r\n/,
    );
    await same(
      (t) => post({ ...auth(t), 'content-type': 'application/json; charset=utf-8' }, script('PRINT é')),
      202,
    );
    // What autocannon and keep-alive agents send.
    await same((t) => post({ ...auth(t), connection: 'keep-alive' }, script('PRINT k')), 202);
    await same((t) => post({ ...auth(t), connection: 'close' }, script('PRINT c')), 202);
    expect(answered.count).toBe(before + 4);
    await Promise.all([fast, normal].map((app) => app.queue.waitForEnd(app.queue.lastIssuedId, 5000)));
  });

  it('answers every refusal as fastify does, reading the body first or not', async () => {
    const before = answered.count;
    await same(() => post(JSON_TYPE, script('PRINT x')), 401);
    await same(() => post({ ...JSON_TYPE, authorization: 'Bearer nope' }, script('PRINT x')), 401);
    await same(
      () => post({ ...JSON_TYPE, authorization: `Bearer ${'A'.repeat(43)}` }, script('PRINT x')),
      401,
    );
    await same((t) => post({ ...auth(t), 'content-type': 'text/plain' }, script('PRINT x')), 415);
    await same((t) => post(auth(t), '{"vendorScript":'), 400);
    await same((t) => post(auth(t), '[1]'), 400);
    await same((t) => post(auth(t), 'null'), 400);
    await same((t) => post(auth(t), '"PRINT x"'), 400);
    await same((t) => post(auth(t), script(42)), 400);
    await same((t) => post(auth(t), '{}'), 400);
    await same((t) => post(auth(t), script('   ')), 400);
    await same((t) => post(auth(t), script('PRINT '.repeat(20))), 413);
    await same((t) => post(auth(t), Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])), 400);
    await same((t) => post(auth(t), '{"vendorScript":"PRINT x","__proto__":{"a":1}}'), 400);
    await same((t) => post(auth(t), '{"vendorScript":"PRINT x","\\u005f_proto__":{"a":1}}'), 400);
    await same((t) => post(auth(t), '{"vendorScript":"PRINT x","constructor":{"prototype":{}}}'), 400);
    await same(
      (t) => post(auth(t), `{"vendorScript":"PRINT x","a":${'['.repeat(40)}${']'.repeat(40)}}`),
      400,
    );
    await same((t) => post(auth(t), `{"vendorScript":"${'x'.repeat(66_200)}"}`), 413);
    // Every one of these was handed to fastify (read or not): none was answered by the fast path.
    expect(answered.count).toBe(before);
  });

  it('leaves unusual requests to fastify and still answers the same', async () => {
    const before = answered.count;
    await same((t) => post(auth(t), script('PRINT q'), '/api/vendor-script?x=1'), 202);
    const chunked = (t: string) =>
      Buffer.concat([
        post({ ...auth(t), 'transfer-encoding': 'chunked' }, ''),
        Buffer.from(`1a\r\n${script('PRINT c')}\r\n0\r\n\r\n`),
      ]);
    await same(chunked, 202);
    await same((t) => post({ ...auth(t), 'idempotency-key': 'k1' }, script('PRINT i')), 202);
    await same((t) => post({ ...auth(t), 'idempotency-key': 'k1' }, script('PRINT i')), 200);
    await same((t) => post({ ...auth(t), 'idempotency-key': 'k1' }, script('PRINT j')), 409);
    expect(answered.count).toBe(before);
    await Promise.all([fast, normal].map((app) => app.queue.waitForEnd(app.queue.lastIssuedId, 5000)));
  });

  it('refuses QUEUE_FULL the same way, after the fast path read the body', async () => {
    const before = answered.count;
    await same((t) => post(auth(t), script('HOLD')), 202);
    await same((t) => post(auth(t), script('PRINT 1')), 202);
    await same((t) => post(auth(t), script('PRINT 2')), 202);
    const full = await same((t) => post(auth(t), script('PRINT 3')), 503);
    expect(full).toContain('QUEUE_FULL');
    expect(full).toMatch(/\r\nretry-after: \d+/i);
    expect(answered.count).toBe(before + 3);
    for (const app of [fast, normal]) app.executor.release();
    await Promise.all([fast, normal].map((app) => app.queue.waitForEnd(app.queue.lastIssuedId - 1, 5000)));
  });

  it('keeps the failed-login limit and token checks of the security baseline', async () => {
    const wrong = JSON.stringify({ userName: USER.userName, password: 'wrong' });
    for (let i = 0; i < 4; i += 1)
      await same(() => post(JSON_TYPE, wrong, '/api/authenticate'), i < 3 ? 401 : 429);
    await same((t) => post(auth(t), script('PRINT after')), 202);
  });

  it('writes the same metrics and the same request log', async () => {
    await Promise.all([fast, normal].map((app) => app.queue.waitForEnd(app.queue.lastIssuedId, 5000)));
    const metrics = async (app: TestApp) => {
      const text = await exchange(
        ports.get(app)!,
        Buffer.from('GET /metrics HTTP/1.1\r\nHost: device\r\nConnection: close\r\n\r\n'),
      );
      // Durations and process figures are clock readings; counts are what must match.
      return text
        .split('\n')
        .filter(
          (line) => !/_(sum|bucket)\{|^process_|^nodejs_|^# |^\s*$/.test(line) && !line.includes('HTTP/1.1'),
        )
        .filter((line) => line.startsWith('regbridge_'))
        .join('\n');
    };
    const fastMetrics = await metrics(fast);
    expect(fastMetrics).toBe(await metrics(normal));
    expect(fastMetrics).toMatch(
      /regbridge_http_requests_total\{method="POST",route="\/api\/vendor-script",status_code="202".*\} \d+/,
    );
    const lines = (app: TestApp) =>
      app.logs
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.reqId !== undefined)
        .map((entry) => {
          const {
            time: _time,
            responseTime: _rt,
            req,
            ...rest
          } = entry as {
            time: number;
            responseTime: number;
            req?: { remotePort?: number };
          };
          return { ...rest, ...(req && { req: { ...req, remotePort: 0 } }) };
        });
    const fastLog = lines(fast);
    expect(fastLog.length).toBeGreaterThan(40);
    expect(normalize(JSON.stringify(fastLog))).toBe(normalize(JSON.stringify(lines(normal))));
  });
});
