/**
 * The usual `POST /api/vendor-script` answered beside fastify (docs/decisions.md, "The submission
 * fast path"; docs/benchmarks.md, "Issue 14", point 1, fourth pass). A request that fastify would
 * accept with 202 costs about half again what bare fastify's costs, spread thinly over fastify's
 * generic per-request path (route context, Request and Reply objects, hooks, the content-type
 * parser, validation, `res.on('finish')` listeners). This path answers the common case with the
 * same bytes, the same metrics and the same request log, and hands anything else to fastify.
 *
 * It is taken only when the headers say the request is the usual one: POST, the exact path (no
 * query), `Content-Type: application/json` (with or without `; charset=utf-8`), a `Content-Length`
 * up to 64 KiB, no `Transfer-Encoding`, `Expect`, `Idempotency-Key` or `Accept-Version` header
 * (`Connection` is node's business: fastify only tracks keep-alive sockets for
 * `forceCloseConnections: true`, which the app does not set), a token the auth service accepts (its check has no side effect: a refused
 * one counts nothing), and the app not closing. It then reads the body and answers 202 only when
 * the body is a JSON object with a string `vendorScript` and the queue admits the script (a refused
 * submission changes nothing in the queue). In every other case, also after the body was read,
 * the request goes to fastify with the bytes read so far (the route's preParsing hook hands them
 * to fastify's body parser), so every refusal is fastify's own answer.
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance, FastifyServerOptions } from 'fastify';
import type { AuthService } from '../auth/auth-service.ts';
import type { TaskQueue } from '../tasks/task-queue.ts';
import { jsonBodyText } from './json-body.ts';
import { acceptedBody, JSON_CONTENT_TYPE } from './schemas.ts';

export const SUBMIT_ROUTE = '/api/vendor-script';
/** How refusals name the script of `POST /api/vendor-script` (SubmitOptions.subject). */
export const VENDOR_SCRIPT_SUBJECT = "body field 'vendorScript'";

/** Bodies above this go through fastify: the fast path holds at most this much per request. */
const MAX_FAST_BODY = 64 * 1024;

/** What the fast path read before handing a request to fastify (taken by the preParsing hook). */
const readBody = Symbol('regbridge.submitFastPath.body');

interface Handed extends IncomingMessage {
  [readBody]?: Readable;
}

/** A request whose body the fast path is reading. */
const reading = Symbol('regbridge.submitFastPath.reading');

interface Reading extends IncomingMessage {
  [reading]?: {
    res: ServerResponse;
    length: number;
    /** performance.now() when the request reached the fast path (fastify's elapsedTime start). */
    start: number;
    chunks: Buffer[];
    received: number;
    done: boolean;
  };
}

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;
type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>;

export interface SubmitFastPathOptions {
  auth: AuthService;
  queue: TaskQueue;
  /** The onResponse hook's metrics: method, route pattern, status code, seconds. */
  observe: (method: string, route: string, statusCode: number, seconds: number) => void;
  /** The app's request ids (fastify's `genReqId`). */
  genReqId: RequestIds;
  /** Counts the requests the fast path answered (tests). */
  answered?: { count: number };
  childLoggerFactory: ChildLoggerFactory;
  /** The body limit of the route (the app's): above it fastify answers without reading. */
  bodyLimit: number;
  /** `--max-json-depth`: json-body.ts refuses deeper bodies before parsing. */
  maxJsonDepth: number;
}

/** fastify's `genReqId`, and a way to use up an id without building its string. */
export interface RequestIds {
  (req: IncomingMessage): string;
  skip(): void;
}

/**
 * fastify's default request ids (`req-1`, `req-2`, ... in base 36, wrapping at 2^31), shared by
 * both paths: a request the fast path answers uses up its id as fastify's would, so the ids in the
 * log are the ones fastify alone would have given, whichever path answered.
 */
export function requestIdGenerator(): RequestIds {
  let next = 0;
  const skip = (): void => {
    next = (next + 1) & 2147483647;
  };
  return Object.assign(
    () => {
      skip();
      return `req-${next.toString(36)}`;
    },
    { skip },
  );
}

/**
 * The vendor-script route's preParsing hook: the body a request handed over by the fast path
 * already read, else the request's own stream.
 */
export function handedBody(
  request: { raw: IncomingMessage },
  _reply: unknown,
  payload: Readable,
  done: (error: Error | null, payload?: Readable) => void,
): void {
  const handed = (request.raw as Handed)[readBody];
  done(null, handed ?? payload);
}

/** Milliseconds, the clock fastify's `reply.elapsedTime` uses. */
const now = (): number => performance.now();

function parseLength(value: string | undefined): number {
  if (value === undefined || value.length === 0 || value.length > 5) return -1;
  for (let i = 0; i < value.length; i += 1) {
    const c = value.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return -1;
  }
  return Number(value);
}

/**
 * Puts the fast path in front of fastify's request handler on `app.server` (call after `ready()`).
 * Returns a function that stops taking the fast path (the app is closing: fastify then answers
 * with `Connection: close`).
 */
export function installSubmitFastPath(app: FastifyInstance, options: SubmitFastPathOptions): () => void {
  const { auth, queue, observe, genReqId, childLoggerFactory, answered } = options;
  const maxBody = Math.min(MAX_FAST_BODY, options.bodyLimit);
  const server = app.server as Server;
  const listeners = server.listeners('request') as RequestHandler[];
  if (listeners.length !== 1)
    throw new Error(`expected fastify's one request listener, found ${listeners.length}`);
  const fastify = listeners[0]!;
  // A pino logger (fastify's child of the app's loggerInstance, with its req/res serializers).
  const log = app.log as FastifyBaseLogger & { isLevelEnabled(level: string): boolean };
  const maxJsonDepth = options.maxJsonDepth;
  const parseJson = app.getDefaultJsonParser('error', 'error');
  let parsed: unknown;
  const took = (error: Error | null, value?: unknown): void => {
    parsed = error === null ? value : undefined;
  };
  let closing = false;

  function usual(req: IncomingMessage): number {
    if (closing || req.method !== 'POST' || req.url !== SUBMIT_ROUTE) return -1;
    const headers = req.headers;
    const type = headers['content-type'];
    if (type !== 'application/json' && type !== JSON_CONTENT_TYPE) return -1;
    if (
      headers['transfer-encoding'] !== undefined ||
      headers.expect !== undefined ||
      headers['idempotency-key'] !== undefined ||
      headers['accept-version'] !== undefined
    )
      return -1;
    const length = parseLength(headers['content-length']);
    if (length <= 0 || length > maxBody) return -1;
    try {
      auth.check(headers.authorization);
    } catch {
      return -1;
    }
    return length;
  }

  /** fastify answers, reading `chunks` (and `error`) as the body instead of the request's stream. */
  function handOver(req: IncomingMessage, res: ServerResponse, chunks: Buffer[], error?: Error): void {
    const body = new Readable({ read() {} });
    for (const chunk of chunks) body.push(chunk);
    if (error) body.destroy(error);
    else body.push(null);
    (req as Handed)[readBody] = body;
    fastify(req, res);
  }

  /** The script of a body the route would accept unchanged, or undefined: json-body.ts's rules. */
  function scriptOf(bytes: Buffer): string | undefined {
    let text: string;
    try {
      text = jsonBodyText(bytes, maxJsonDepth);
    } catch {
      return undefined; // fastify refuses it with the same rule's answer
    }
    parsed = undefined;
    // fastify's own JSON parser (prototype poisoning refused), synchronous: it calls back at once.
    void parseJson(undefined as never, text, took);
    const value = parsed as { vendorScript?: unknown } | null | undefined;
    parsed = undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    return typeof value.vendorScript === 'string' ? value.vendorScript : undefined;
  }

  function answer(
    req: IncomingMessage,
    res: ServerResponse,
    bytes: Buffer,
    chunks: Buffer[],
    start: number,
  ): void {
    const script = scriptOf(bytes);
    if (script === undefined) {
      handOver(req, res, chunks);
      return;
    }
    let id: number;
    try {
      id = queue.submit(script, { source: 'rest', subject: VENDOR_SCRIPT_SUBJECT, idempotencyKey: undefined })
        .task.id;
    } catch {
      // Refused (blank, too large, queue full): nothing was queued, and fastify's route refuses
      // it again with its own answer.
      handOver(req, res, chunks);
      return;
    }
    if (answered) answered.count += 1;
    let requestLog: FastifyBaseLogger | undefined;
    if (log.isLevelEnabled('info')) requestLog = requestLogger(req);
    else genReqId.skip();
    const body = acceptedBody(id);
    // fastify's header order: the route's Location, then its Content-Type, then Content-Length.
    res.writeHead(202, {
      location: `/api/tasks/${id}`,
      'content-type': JSON_CONTENT_TYPE,
      'content-length': String(body.length),
    });
    if (requestLog === undefined) {
      res.end(body);
      // fastify's onResponse hook runs on 'finish'; a listener per request is what this avoids.
      if (!res.destroyed) observe('POST', SUBMIT_ROUTE, 202, (now() - start) / 1000);
      return;
    }
    res.once('finish', () => {
      const elapsed = now() - start;
      observe('POST', SUBMIT_ROUTE, 202, elapsed / 1000);
      requestLog.info({ res: { statusCode: 202 }, responseTime: elapsed }, 'request completed');
    });
    res.end(body);
  }

  /** The request's child logger and its "incoming request" line, as fastify writes them. */
  function requestLogger(req: IncomingMessage): FastifyBaseLogger {
    const child = childLoggerFactory.call(app, log, { reqId: genReqId(req) }, {}, req);
    const socket = req.socket;
    child.info(
      {
        req: {
          method: req.method,
          url: req.url,
          headers: req.headers,
          host: req.headers.host,
          ip: socket.remoteAddress,
          socket,
        },
      },
      'incoming request',
    );
    return child;
  }

  // The body's listeners are shared by every request and find its state on the request: closures
  // per request would each cost an allocation, and under tsx (esbuild's keepNames; the benchmarks
  // run the sources through it) a `__name` property definition too, which a CPU profile showed
  // costing as much as the whole answer. The bundle keeps names without it.
  function onData(this: Reading, chunk: Buffer): void {
    const state = this[reading]!;
    state.chunks.push(chunk);
    state.received += chunk.length;
  }
  function onEnd(this: Reading): void {
    const state = this[reading]!;
    if (state.done) return;
    state.done = true;
    const { chunks, received } = state;
    if (received !== state.length) handOver(this, state.res, chunks);
    else
      answer(
        this,
        state.res,
        chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received),
        chunks,
        state.start,
      );
  }
  function onError(this: Reading, error: Error): void {
    const state = this[reading]!;
    if (state.done) return;
    state.done = true;
    handOver(this, state.res, state.chunks, error);
  }

  function read(req: Reading, res: ServerResponse, length: number): void {
    req[reading] = { res, length, start: now(), chunks: [], received: 0, done: false };
    // Left attached once the body is read (`done` guards them): removing them costs more than the
    // request object they die with.
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  }

  server.removeListener('request', fastify);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const length = usual(req);
    if (length < 0) fastify(req, res);
    else read(req as Reading, res, length);
  });
  return () => {
    closing = true;
  };
}
