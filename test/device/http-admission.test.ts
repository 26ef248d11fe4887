/**
 * The REST side of the one admission path: the engine decides, REST translates (status, headers,
 * the contract's error body). Script size is the script's UTF-8 size whatever the JSON escaping
 * (the body limit leaves room for the worst case), and bodies must be UTF-8.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bodyLimitFor } from '../../src/app.ts';
import { bearer, login, startTestApp, type TestApp } from '../support/http.ts';

const apps: TestApp[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function app(maxScriptBytes?: number): Promise<{ t: TestApp; auth: Record<string, string> }> {
  const t = await startTestApp(maxScriptBytes === undefined ? {} : { maxScriptBytes });
  apps.push(t);
  return { t, auth: bearer(await login(t.app)) };
}

/**
 * JSON with every non-ASCII character escaped as \uXXXX, as Python's json.dumps writes it
 * (JSON.stringify already writes control characters as \u0001).
 */
function asciiJson(value: Record<string, string>): string {
  const json = JSON.stringify(value);
  let out = '';
  for (let i = 0; i < json.length; i += 1) {
    const unit = json.charCodeAt(i);
    out += unit < 0x7f ? json[i] : `\\u${unit.toString(16).padStart(4, '0')}`;
  }
  return out;
}

describe('script size is the script, not the body', () => {
  it('accepts a 0.7 MiB non-ASCII script sent with \\uXXXX escapes (default limit)', async () => {
    const { t, auth } = await app();
    // 0.7 MiB of UTF-8 (2 bytes per é), 2.1 MiB of escaped JSON: more than the former body limit.
    const script = `PRINT ${'é'.repeat(367_000)}`;
    const bytes = Buffer.byteLength(script, 'utf8');
    expect(bytes).toBeGreaterThan(0.7 * 1024 * 1024);
    const body = asciiJson({ fmScript: script });
    expect(body.length).toBeGreaterThan(2 * 1024 * 1024 + 64 * 1024);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/fm-script',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: body,
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ status: 'FINISHED', report: 'é'.repeat(367_000) });
  });

  it('accepts the worst escaping of a script of exactly the limit (6 bytes of JSON per byte)', async () => {
    const { t, auth } = await app(1000);
    const script = `PRINT ${'\u0001'.repeat(994)}`;
    const body = asciiJson({ vendorScript: script });
    expect(body.length).toBeGreaterThan(5900);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: body,
    });
    expect(response.statusCode).toBe(202);
    expect(t.queue.list()).toHaveLength(1);
  });

  it('refuses one byte more by the script limit, with the script limit message', async () => {
    const { t, auth } = await app(1000);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: asciiJson({ vendorScript: `PRINT ${'\u0001'.repeat(995)}` }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({
      statusCode: 413,
      error: 'Payload Too Large',
      code: 'SCRIPT_TOO_LARGE',
      message: "body field 'vendorScript' is 1001 bytes of UTF-8; the limit is 1000",
    });
    expect(t.queue.list()).toHaveLength(0);
  });

  it('the body limit is 6 x the script limit + 64 KiB', () => {
    expect(bodyLimitFor(1000)).toBe(6000 + 65536);
    expect(bodyLimitFor(1024 * 1024)).toBe(6 * 1024 * 1024 + 65536);
  });
});

describe('UTF-8', () => {
  it('refuses a body that is not valid UTF-8 with 400, queueing nothing', async () => {
    const { t, auth } = await app();
    // "café" in Latin-1: the é is the single byte 0xE9, not valid UTF-8.
    const latin1 = (field: string) => Buffer.from(`{"${field}": "PRINT café"}`, 'latin1');
    for (const [url, field] of [
      ['/api/vendor-script', 'vendorScript'],
      ['/api/fm-script', 'fmScript'],
    ] as const) {
      const response = await t.app.inject({
        method: 'POST',
        url,
        headers: { ...auth, 'content-type': 'application/json; charset=utf-8' },
        payload: latin1(field),
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        code: 'INVALID_REQUEST',
        message: 'Body is not valid UTF-8',
      });
    }
    expect(t.queue.list()).toHaveLength(0);
  });

  it('accepts raw UTF-8 and \\u escapes alike: the same script either way', async () => {
    const { t, auth } = await app();
    const post = (payload: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/fm-script',
        headers: { ...auth, 'content-type': 'application/json' },
        payload,
      });
    const raw = await post('{"fmScript": "PRINT café € 😀"}');
    expect(raw.json()).toMatchObject({ status: 'FINISHED', report: 'café € 😀' });
    const escaped = await post('{"fmScript": "PRINT caf\\u00e9 \\u20ac \\ud83d\\ude00"}');
    expect(escaped.json()).toMatchObject({ status: 'FINISHED', report: 'café € 😀' });
  });
});
