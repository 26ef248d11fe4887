/**
 * /openapi.json as client generators read it (issue 13 item 11): task ids are `integer` with
 * `format: int64` (the vendor's Java client holds them in a `long`; without it generators emit a
 * 32-bit `Integer`), no integer carries a `pattern` (OpenAPI applies it to strings only), and the
 * two forms of authenticate say which one browsers and generators should use.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/http.ts';

type Json = Record<string, unknown>;
let t: TestApp;
let document: { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, Json> } };

beforeAll(async () => {
  t = await startTestApp();
  document = (await t.app.inject({ url: '/openapi.json' })).json();
});

afterAll(async () => {
  await t.close();
});

/** Every schema object of type integer in the document, with where it is. */
function integers(node: unknown, path = '', found: Array<[string, Json]> = []): Array<[string, Json]> {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) integers(item, `${path}[${i}]`, found);
  } else if (node && typeof node === 'object') {
    const schema = node as Json;
    if (schema.type === 'integer') found.push([path, schema]);
    for (const [key, value] of Object.entries(schema)) integers(value, `${path}/${key}`, found);
  }
  return found;
}

describe('OpenAPI for client generators', () => {
  it('task ids are int64 everywhere: bodies, path parameter, not-found body, health counter', () => {
    const { schemas } = document.components;
    const props = (name: string): Record<string, Json> =>
      (schemas[name] as { properties: Record<string, Json> }).properties;
    expect(props('Task').id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(props('Accepted').id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(props('TaskDoesNotExist').id).toMatchObject({ type: 'integer', format: 'int64' });
    const get = document.paths['/api/tasks/{id}']!.get as {
      parameters: Array<{ name: string; schema: Json }>;
    };
    expect(get.parameters.find((p) => p.name === 'id')!.schema).toEqual({
      type: 'integer',
      format: 'int64',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    // Small bounded integers stay int32.
    expect(get.parameters.find((p) => p.name === 'waitMs')!.schema).toMatchObject({
      format: 'int32',
      maximum: 30000,
    });
  });

  it('no integer has a pattern; every integer has a format', () => {
    const all = integers(document);
    expect(all.length).toBeGreaterThan(5);
    for (const [where, schema] of all) {
      expect(schema, where).not.toHaveProperty('pattern');
      expect(['int32', 'int64'], where).toContain(schema.format);
    }
  });

  it('authenticate: GET with a body is the vendor form; POST is the one for browsers and generators', () => {
    const { get, post } = document.paths['/api/authenticate']! as Record<
      string,
      { summary: string; description: string }
    >;
    expect(get!.summary).toBe(
      'Trade a user name and password for a bearer token (vendor form: GET with a JSON body)',
    );
    expect(get!.description).toMatch(
      /OpenAPI 3\.0 tools ignore a GET body .* should use POST \/api\/authenticate/,
    );
    expect(post!.summary).toBe(
      'Trade a user name and password for a bearer token (the form for browsers and generated clients)',
    );
    expect(post!.description).toMatch(/browsers, swagger-ui and clients generated from this description/);
  });
});
