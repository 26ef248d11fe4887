/**
 * The OpenAPI 3 description (docs/api.md, "OpenAPI"), generated from the routes' zod
 * schemas (so it cannot drift from what is validated), served as /openapi.json and as
 * swagger-ui at /docs. Response headers and the bearer scheme are added here, once.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import * as z from 'zod';
import { VERSION } from '../version.ts';
import { apiSchemas, jsonResponse } from './schemas.ts';

/** The little of an OpenAPI 3 document this module edits. */
interface HeaderObject {
  description: string;
  schema: { type: string };
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  [key: string]: unknown;
}
interface Operation {
  responses?: Record<string, ResponseObject>;
  [key: string]: unknown;
}
interface Document {
  paths?: Record<string, Record<string, Operation | undefined>>;
  components?: { schemas?: Record<string, unknown>; [key: string]: unknown };
  [key: string]: unknown;
}

const header = (description: string, type: 'string' | 'integer' = 'string'): HeaderObject => ({
  description,
  schema: { type },
});

/** Headers the contract requires, by status code. */
const HEADERS_BY_STATUS: Record<string, Record<string, HeaderObject>> = {
  '201': { Location: header('Where the created resource is') },
  '202': { Location: header('/api/tasks/<id>: where to poll the task') },
  '401': { 'WWW-Authenticate': header('Bearer') },
  '429': { 'Retry-After': header('Seconds until another attempt is allowed', 'integer') },
  '503': { 'Retry-After': header('Seconds to wait before submitting again', 'integer') },
};

function addResponseHeaders(path: string, responses: Record<string, ResponseObject>): void {
  for (const [status, response] of Object.entries(responses)) {
    const headers = { ...HEADERS_BY_STATUS[status] };
    // An Idempotency-Key replay answers 200 and still points at the task.
    if (status === '200' && ['/api/vendor-script', '/api/fm-script', '/api/jobs'].includes(path)) {
      headers.Location = header('/api/tasks/<id>');
    }
    if (Object.keys(headers).length > 0) response.headers = { ...response.headers, ...headers };
  }
}

function refsIn(value: unknown): string[] {
  return [...JSON.stringify(value ?? null).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
}

/** The generator emits an input and an output copy of every component; keep the ones used. */
function pruneUnusedSchemas(document: Document): void {
  const schemas = document.components?.schemas;
  if (!schemas) return;
  const reachable = new Set<string>();
  const pending = refsIn(document.paths);
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (reachable.has(name)) continue;
    reachable.add(name);
    pending.push(...refsIn(schemas[name]));
  }
  for (const name of Object.keys(schemas)) if (!reachable.has(name)) delete schemas[name];
}

const INT32_MAX = 2 ** 31 - 1;

/**
 * Integers as Java and other generators need them: `format: int64` where a value can exceed 32
 * bits (task ids are about 1.8e15; the vendor's client holds them in a `long`), and no
 * `pattern` (the generator copies the digit pattern that validates query strings; OpenAPI applies
 * `pattern` to strings only, so on an integer it says nothing).
 */
function fixIntegers(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) fixIntegers(item);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Record<string, unknown>;
  if (schema.type === 'integer') {
    delete schema.pattern;
    const max = typeof schema.maximum === 'number' ? schema.maximum : Number.POSITIVE_INFINITY;
    const min = typeof schema.minimum === 'number' ? schema.minimum : Number.NEGATIVE_INFINITY;
    if (max > INT32_MAX || min < -INT32_MAX - 1) schema.format = 'int64';
    else schema.format ??= 'int32';
  }
  for (const value of Object.values(schema)) fixIntegers(value);
}

function finishDocument(document: Document): Document {
  const paths = document.paths ?? {};
  for (const [path, item] of Object.entries(paths)) {
    for (const operation of Object.values(item)) {
      if (operation?.responses) addResponseHeaders(path, operation.responses);
    }
  }
  paths['/docs'] = {
    get: {
      tags: ['service'],
      summary: 'This description, rendered by swagger-ui',
      responses: { '200': { description: 'HTML page', content: { 'text/html': {} } } },
    },
  };
  document.paths = paths;
  pruneUnusedSchemas(document);
  fixIntegers(document.paths);
  fixIntegers(document.components?.schemas);
  return document;
}

/** What differs between the services' documents: the device's (default) and the controller's. */
export interface OpenApiInfo {
  title: string;
  description: string;
  tags: { name: string; description: string }[];
}

const DEVICE_DOCUMENT: OpenApiInfo = {
  title: 'regbridge device service',
  description:
    'The vendor-compatible REST interface of one cash register (docs/api.md). ' +
    'Every error answers `{statusCode, error, code, message}`; see docs/errors.md for the codes.',
  tags: [
    { name: 'auth', description: 'Bearer tokens' },
    { name: 'tasks', description: 'Scripts and their outcome' },
    { name: 'service', description: 'Health, metrics, this description' },
  ],
};

export async function registerOpenApi(
  app: FastifyInstance,
  document: OpenApiInfo = DEVICE_DOCUMENT,
): Promise<void> {
  // Imported here, not at the top: a device loads them only when its description is asked for.
  const [{ default: fastifySwagger }, { default: fastifySwaggerUi }] = await Promise.all([
    import('@fastify/swagger'),
    import('@fastify/swagger-ui'),
  ]);
  const transformObject = createJsonSchemaTransformObject({ schemaRegistry: apiSchemas });
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: document.title, description: document.description, version: VERSION },
      tags: document.tags,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'A token from /api/authenticate (not needed when the device runs with --auth off)',
          },
        },
      },
    },
    transform: createJsonSchemaTransform({ schemaRegistry: apiSchemas, skipList: [] }),
    transformObject: (input) =>
      finishDocument(transformObject(input) as Document) as ReturnType<typeof transformObject>,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get(
    '/openapi.json',
    {
      schema: {
        tags: ['service'],
        summary: 'This OpenAPI 3 description',
        response: { 200: jsonResponse('OpenAPI 3.0 document', z.looseObject({ openapi: z.string() })) },
      },
    },
    async () => app.swagger(),
  );
}

/** Response headers of the documentation app that describe its own connection, not the content. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date']);

/**
 * `/openapi.json`, `/docs` and `/docs/*` answered by a documentation app built on the first
 * request for one of them: the same routes with @fastify/swagger and swagger-ui registered
 * (`registerOpenApi`), never listening, asked through `inject`. A device that nobody asks for its
 * description never loads swagger, swagger-ui, their static files and YAML writer
 * (docs/decisions/load-only-what-runs.md), and the answers are the
 * documentation app's own, byte for byte. `closeDocsApp` is for the serving app's onClose.
 */
export function registerLazyOpenApi(
  app: FastifyInstance,
  buildDocsApp: () => Promise<FastifyInstance>,
): { closeDocsApp: () => Promise<void> } {
  let docsApp: Promise<FastifyInstance> | undefined;
  const relay = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    // A build that failed is tried again by the next request rather than kept as the answer.
    docsApp ??= buildDocsApp().catch((error: unknown) => {
      docsApp = undefined;
      throw error;
    });
    const built = docsApp;
    const headers = { ...request.headers };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    const response = await (await built).inject({ method: 'GET', url: request.url, headers });
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name)) reply.header(name, value);
    }
    reply.code(response.statusCode);
    // An empty body (a redirect) stays empty, rather than becoming an octet-stream of no bytes.
    return response.rawPayload.length === 0 ? reply.send() : reply.send(response.rawPayload);
  };
  app.get('/openapi.json', relay);
  app.get('/docs', relay);
  app.get('/docs/*', relay);
  return {
    closeDocsApp: async () => {
      const built = await docsApp?.catch(() => undefined);
      await built?.close();
    },
  };
}
