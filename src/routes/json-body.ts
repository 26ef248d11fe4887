/**
 * The one JSON body parser of the REST API (docs/api.md: bodies are JSON in UTF-8;
 * docs/security.md, "Limits"). In front of fastify's own parser (which keeps refusing
 * `__proto__` and `constructor` poisoning and reports syntax errors) it:
 * - does not parse at all for a route that reads no body (`/health`, `/api/tasks/{id}`, ...);
 * - lets an empty body through as "no body" on GET, which many HTTP clients send with
 *   `Content-Type: application/json` on every request; a route that needs a body then says
 *   which field is missing, and POST keeps refusing an empty JSON body;
 * - refuses invalid UTF-8 with the engine's rule (src/tasks/script-text.ts: 400 INVALID_REQUEST,
 *   as the MQTT side refuses such a payload): fastify's parser would turn it into U+FFFD, so a
 *   script could run as something other than what was sent;
 * - refuses a document nested deeper than `--max-json-depth` after one linear scan, before
 *   JSON.parse builds it: a 2 MB body of a million `[` otherwise costs a third of a second of
 *   CPU on a route anyone may call.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import { decodeUtf8 } from '../tasks/script-text.ts';
import { ApiError } from './api-error.ts';

/** `--max-json-depth` of `serve` (its flag table holds the same default); other services use this. */
export const DEFAULT_MAX_JSON_DEPTH = 32;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether `text` nests objects and arrays deeper than `limit` (the scan stops there). Brackets
 * inside strings do not count. Malformed JSON is left to the parser: this only has to be right
 * for documents that would parse.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  // Each level opens with a character of its own: a text this short cannot nest deeper.
  if (text.length <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i += 1;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth += 1;
      if (depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
  return false;
}

/**
 * A body's text under the rules above that come before JSON.parse (UTF-8, nesting depth), or a
 * thrown 400 INVALID_REQUEST.
 */
export function jsonBodyText(bytes: Buffer, maxDepth: number): string {
  const text = decodeUtf8(bytes, 'Body');
  if (jsonDepthExceeds(text, maxDepth))
    throw new ApiError('INVALID_REQUEST', `Body is nested deeper than ${maxDepth} levels`);
  return text;
}

/** Set on requests to a route that declares no body schema: their body is never parsed. */
const kSkipsBody = Symbol('regbridge.skipsBody');
type MarkedRequest = FastifyRequest & { [kSkipsBody]: boolean };

/**
 * Call before any route is registered: which routes read a body (authenticate, vendor-script,
 * fm-script) is fixed when each route is registered, not looked up per request
 * (`request.routeOptions` builds a fresh object on every read).
 */
export function installJsonBodyParser(app: FastifyInstance, maxDepth: number): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.decorateRequest(kSkipsBody, false);
  const markSkipsBody: onRequestHookHandler = (request, _reply, done) => {
    (request as MarkedRequest)[kSkipsBody] = true;
    done();
  };
  app.addHook('onRoute', (routeOptions) => {
    if ((routeOptions.schema as { body?: unknown } | undefined)?.body !== undefined) return;
    const own = routeOptions.onRequest;
    routeOptions.onRequest = own === undefined ? [markSkipsBody] : [...[own].flat(), markSkipsBody];
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    // Unmatched requests have no route to read a body: they answer 404 whatever they carry.
    if ((request as MarkedRequest)[kSkipsBody] || request.is404) {
      done(null, undefined);
      return;
    }
    if (bytes.length === 0) {
      if (request.method === 'GET') done(null, undefined);
      else done(new ApiError('INVALID_REQUEST', 'Body is empty but Content-Type is application/json'));
      return;
    }
    let text: string;
    try {
      text = jsonBodyText(bytes, maxDepth);
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    // fastify's parser is synchronous: it calls done() before returning.
    void parseJson(request, text, done);
  });
}
