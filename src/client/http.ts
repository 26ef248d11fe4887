/**
 * One HTTP exchange over undici, with every failure turned into a RestException. undici's
 * `request` (unlike fetch) sends a body with GET, which the vendor's `GET /api/authenticate` needs.
 */
import { type Dispatcher, Pool } from 'undici';
import type { z } from 'zod';
import { ConnectionException, RestException, TimeoutException } from './rest-exception.ts';
import { errorBodySchema } from './types.ts';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path and query, starting with `/`. */
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Added to the exchange's time allowance: the server-side wait of a long poll or fm-script call. */
  extraTimeoutMs?: number;
}

export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined for an empty body. */
  json: unknown;
}

export interface HttpTransportOptions {
  origin: string;
  /** Prefix of every path, without trailing `/` ('' for none). */
  basePath: string;
  requestTimeoutMs: number;
  connections: number;
  dispatcher?: Dispatcher;
  /** Private CA for https (DeviceClientOptions.ca). */
  ca?: string | Buffer | undefined;
}

export class HttpTransport {
  private readonly options: HttpTransportOptions;
  private pool: Pool | undefined;
  private closed = false;

  constructor(options: HttpTransportOptions) {
    this.options = options;
  }

  /** The dispatcher is created on first use, so a client that is never used opens nothing. */
  private dispatcher(): Dispatcher {
    if (this.closed) throw new ConnectionException('client is closed');
    if (this.options.dispatcher) return this.options.dispatcher;
    this.pool ??= new Pool(this.options.origin, {
      connections: this.options.connections,
      ...(this.options.ca !== undefined && { connect: { ca: this.options.ca } }),
    });
    return this.pool;
  }

  async send(req: HttpRequest): Promise<HttpResponse> {
    const path = `${this.options.basePath}${req.path}`;
    const timeout = this.options.requestTimeoutMs + (req.extraTimeoutMs ?? 0);
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    let answer: Dispatcher.ResponseData;
    let text: string;
    try {
      answer = await this.dispatcher().request({
        origin: this.options.origin,
        path,
        method: req.method,
        headers,
        body,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      text = await answer.body.text();
    } catch (error) {
      throw transportError(error, `${req.method} ${this.options.origin}${path}`);
    }
    return { statusCode: answer.statusCode, headers: answer.headers, json: parseJson(answer, text) };
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await pool.close();
  }
}

function parseJson(answer: Dispatcher.ResponseData, text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    const contentType = String(answer.headers['content-type'] ?? 'no content type');
    throw new RestException(`HTTP ${answer.statusCode}: answer is not JSON (${contentType})`, {
      statusCode: answer.statusCode,
      code: answer.statusCode >= 400 ? 'HTTP_ERROR' : 'INVALID_RESPONSE',
      body: text.slice(0, 1000),
    });
  }
}

function transportError(error: unknown, what: string): RestException {
  if (error instanceof RestException) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const reason = error instanceof Error ? error.message : String(error);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new TimeoutException(`${what}: no answer in time (${reason})`, { cause: error });
  }
  const prefix = typeof code === 'string' && !reason.includes(code) ? `${code}: ` : '';
  return new ConnectionException(`${what}: ${prefix}${reason}`, error);
}

/** The RestException for a non-2xx answer, carrying the contract's error body when there is one. */
export function errorFromResponse(res: HttpResponse): RestException {
  const parsed = errorBodySchema.safeParse(res.json);
  const body = parsed.success ? parsed.data : undefined;
  const retryAfter = Number(res.headers['retry-after']);
  const serverMessage = body?.message;
  const code = body?.code ?? 'HTTP_ERROR';
  return new RestException(
    serverMessage ? `HTTP ${res.statusCode} ${code}: ${serverMessage}` : `HTTP ${res.statusCode}`,
    {
      statusCode: res.statusCode,
      code,
      serverMessage,
      body: res.json,
      retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
    },
  );
}

/** The answer's JSON body as `schema` describes it; a RestException INVALID_RESPONSE otherwise. */
export function parseBody<S extends z.ZodType>(schema: S, res: HttpResponse): z.infer<S> {
  const parsed = schema.safeParse(res.json);
  if (!parsed.success) {
    throw new RestException(
      `HTTP ${res.statusCode}: unexpected answer body (${parsed.error.issues[0]?.message})`,
      {
        statusCode: res.statusCode,
        code: 'INVALID_RESPONSE',
        body: res.json,
      },
    );
  }
  return parsed.data;
}
