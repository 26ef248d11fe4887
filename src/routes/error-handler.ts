/**
 * One error body for everything (docs/api.md): `{statusCode, error, code, message}`
 * (+ `id`, `status` for TASK_DOES_NOT_EXIST), whether the error is ours (ApiError), the task
 * engine's (DomainError, translated by api-error.ts), a failed zod validation, one of fastify's
 * own (bad JSON, wrong content type, body too large), an unknown route or a bug (500, logged
 * with its stack; the client sees no internals).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError, type HttpErrorCode, hasHttpStatus } from '../errors.ts';
import { ApiError, fromDomainError } from './api-error.ts';
import { JSON_CONTENT_TYPE } from './schemas.ts';

interface ValidationIssue {
  instancePath: string;
  message?: string;
}

const WHERE: Record<string, string> = {
  body: 'body field',
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
};

/** "body field 'vendorScript' is required; query parameter 'waitMs' must be ...". */
export function validationMessage(context: string | undefined, issues: readonly ValidationIssue[]): string {
  const parts = issues.map((issue) => {
    const path = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const where = path ? `${WHERE[context ?? ''] ?? context ?? 'request'} '${path}'` : (context ?? 'request');
    const message = issue.message ?? 'is invalid';
    // Our schemas use predicates ("is required"); zod's own messages are sentences.
    return /^[a-z]/.test(message) ? `${where} ${message}` : `${where}: ${message}`;
  });
  return [...new Set(parts)].join('; ');
}

/** fastify's own errors, by code, as contract errors. */
function fromFastifyError(
  error: FastifyError,
  bodyLimit: number,
  request: FastifyRequest,
): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      // Routes with their own, smaller limit (authenticate) carry no script: say so.
      const limit = request.routeOptions.bodyLimit ?? bodyLimit;
      if (limit < bodyLimit)
        return new ApiError('BODY_TOO_LARGE', `Request body is larger than ${limit} bytes`);
      return new ApiError('SCRIPT_TOO_LARGE', `Request body is larger than ${bodyLimit} bytes`);
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_REQUEST', 'Body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Also prototype poisoning (`__proto__` keys). The parser's own message, which would quote
      // the body (and maybe a password), is never passed on.
      return new ApiError('INVALID_REQUEST', 'Body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('INVALID_REQUEST', 'Body size does not match Content-Length');
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const byStatus: Record<number, HttpErrorCode> = {
      404: 'ROUTE_NOT_FOUND',
      413: 'SCRIPT_TOO_LARGE',
      415: 'UNSUPPORTED_MEDIA_TYPE',
    };
    return new ApiError(byStatus[status] ?? 'INVALID_REQUEST', error.message);
  }
  return undefined;
}

export function sendApiError(reply: FastifyReply, error: ApiError): FastifyReply {
  // Bypass the route's response schema: error bodies are exactly what toBody() says.
  return reply
    .code(error.statusCode)
    .headers(error.headers)
    .type(JSON_CONTENT_TYPE)
    .serializer(JSON.stringify)
    .send(error.toBody());
}

export function installErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof ApiError) return sendApiError(reply, error);
    if (error instanceof DomainError) {
      if (!hasHttpStatus(error.code)) request.log.error({ err: error }, 'a domain error without a REST form');
      return sendApiError(reply, fromDomainError(error));
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      return sendApiError(
        reply,
        new ApiError('INVALID_REQUEST', validationMessage(error.validationContext, error.validation)),
      );
    }
    const mapped = fromFastifyError(error, bodyLimit, request);
    if (mapped) return sendApiError(reply, mapped);
    request.log.error({ err: error }, 'unexpected error while answering a request');
    return sendApiError(
      reply,
      new ApiError('INTERNAL_ERROR', 'Internal error; the service logged the details'),
    );
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    sendApiError(reply, new ApiError('ROUTE_NOT_FOUND', `No route for ${request.method} ${path}`));
  });
}

/**
 * fastify's `frameworkErrors`: a path that is not valid percent-encoding (`/api/tasks/%ZZ`) and a
 * path parameter over the router's length limit answer INVALID_REQUEST in the contract's body
 * instead of fastify's FST_ERR_BAD_URL / FST_ERR_MAX_PARAM_LENGTH bodies.
 */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_BAD_URL'
      ? 'The path is not valid percent-encoding'
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'A path parameter is too long'
        : 'The request could not be routed';
  sendApiError(reply, new ApiError('INVALID_REQUEST', message));
}

/**
 * The `clientError` handler: requests node's HTTP parser refuses before fastify sees them (an
 * unknown method, a malformed request line, headers over node's 16 KiB, a request that
 * took too long) still get the contract's body, then the connection is closed (node's own
 * behaviour: the parser's state is lost). The parser's code (`HPE_INVALID_METHOD`) is named;
 * nothing of the request is echoed.
 */
export function clientErrorHandler(
  this: FastifyInstance,
  error: NodeJS.ErrnoException,
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let apiError: ApiError;
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    apiError = new ApiError('HEADERS_TOO_LARGE', 'The request line and headers are over the size limit');
  } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    apiError = new ApiError('REQUEST_TIMEOUT', 'The request was not received in time');
  } else {
    const parserCode = /^HPE_[A-Z_]+$/.test(error.code ?? '') ? ` (${error.code})` : '';
    apiError = new ApiError('MALFORMED_HTTP', `The request is not valid HTTP/1.1${parserCode}`);
  }
  this.log.debug({ code: error.code }, 'refused a malformed HTTP request');
  if (socket.writable) {
    const body = JSON.stringify(apiError.toBody());
    socket.write(
      `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}\r\nConnection: close\r\n` +
        `Content-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
